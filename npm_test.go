package tenantd_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestNpmInstallScriptsReviewed: every package of package-lock.json with
// an install script has a decision in package.json's allowScripts (npm 11
// runs none without one, and ends each npm ci of a fresh clone with a
// warning that asks the newcomer to review them).
func TestNpmInstallScriptsReviewed(t *testing.T) {
	var pkg struct {
		AllowScripts map[string]bool `json:"allowScripts"`
	}
	var lock struct {
		Packages map[string]struct {
			Version          string `json:"version"`
			HasInstallScript bool   `json:"hasInstallScript"`
		} `json:"packages"`
	}
	for file, v := range map[string]any{"package.json": &pkg, "package-lock.json": &lock} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	n := 0
	for where, p := range lock.Packages {
		if !p.HasInstallScript {
			continue
		}
		n++
		const dir = "node_modules/"
		name := where[strings.LastIndex(where, dir)+len(dir):] // a nested one's own name, scope included
		_, byName := pkg.AllowScripts[name]
		_, byVersion := pkg.AllowScripts[name+"@"+p.Version]
		if !byName && !byVersion {
			t.Errorf("%s (%s) has an install script and no decision in package.json's allowScripts: npm install-scripts approve or deny it", name, where)
		}
	}
	if n == 0 {
		t.Log("no package with an install script in package-lock.json")
	}
}
