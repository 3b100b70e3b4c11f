package authz_test

import (
	"os"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/internal/authz"
)

// TestREADMEMatrix keeps the README's role matrix and authz.Matrix equal:
// same actions, same minimum org role, and an "also" entry exactly where a
// rule lets a lesser role through.
func TestREADMEMatrix(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[authz.Action]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			continue
		}
		action := authz.Action(strings.Trim(strings.TrimSpace(cells[1]), "`"))
		rule, ok := authz.Matrix[action]
		if !ok {
			continue // another table of backticked names (configuration)
		}
		seen[action] = true
		if got, want := strings.TrimSpace(cells[2]), string(rule.Min); got != want {
			t.Errorf("%s: README says %q, code says %q", action, got, want)
		}
		if got, want := strings.TrimSpace(cells[3]) != "", rule.Also != nil; got != want {
			t.Errorf("%s: README 'also' present = %v, code has an extra rule = %v", action, got, want)
		}
	}
	for a := range authz.Matrix {
		if !seen[a] {
			t.Errorf("README's matrix lacks %s", a)
		}
	}
}
