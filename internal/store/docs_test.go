package store_test

// docs/data-model.md is the map of the table; these tests keep it equal to
// the code, like the README's authorization matrix test: the entity list
// and the access-pattern chart cannot drift.

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/store/storetest"
)

func dataModel(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/data-model.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDataModelEntities: every item type the store writes (the invariant
// checker's list, storetest.EntityTypes) is in the discriminator row of
// section 1 and has its entity chart in section 2, and nothing else is.
func TestDataModelEntities(t *testing.T) {
	doc := dataModel(t)
	want := storetest.EntityTypes()
	row := regexp.MustCompile(`(?m)^\| entity discriminator \| .*$`).FindString(doc)
	var listed []string
	for _, m := range regexp.MustCompile("`([A-Za-z]+)`").FindAllStringSubmatch(row, -1) {
		if m[1] != "type" {
			listed = append(listed, m[1])
		}
	}
	slices.Sort(listed)
	if !slices.Equal(listed, want) {
		t.Errorf("section 1 lists the types %v, the store writes %v", listed, want)
	}
	section2 := doc[strings.Index(doc, "## 2. Entity chart"):strings.Index(doc, "## 3. Access-pattern chart")]
	var charted []string
	for _, m := range regexp.MustCompile(`(?m)^\*\*([A-Za-z]+)\*\*`).FindAllStringSubmatch(section2, -1) {
		charted = append(charted, m[1])
	}
	slices.Sort(charted)
	if !slices.Equal(charted, want) {
		t.Errorf("section 2 charts %v, the store writes %v", charted, want)
	}
}

// checkChart holds the read chart of section 3 to TestAccessPatterns' rows
// (pattern -> operations): the same patterns, the same operations, and a
// store method that exists for each.
func checkChart(t *testing.T, rows map[string]string) {
	t.Helper()
	doc := dataModel(t)
	start := strings.Index(doc, "| pattern (test row) |")
	if start < 0 {
		t.Fatal("docs/data-model.md has no access-pattern chart")
	}
	chart := doc[start:]
	chart = chart[:strings.Index(chart, "\n\n")]
	types := map[string]reflect.Type{}
	for _, v := range []any{&store.Orgs{}, &store.Teams{}, &store.Tickets{}, &store.Invitations{}, &store.Audit{}, &store.Deletions{}} {
		types[reflect.TypeOf(v).Elem().Name()] = reflect.TypeOf(v)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(chart, "\n")[2:] {
		cells := strings.Split(line, " | ")
		if len(cells) < 5 {
			t.Errorf("chart row %q: want 5 cells", line)
			continue
		}
		pattern, op, method := strings.TrimPrefix(cells[0], "| "), strings.Trim(cells[1], "`"), strings.Trim(cells[3], "`")
		seen[pattern] = true
		want, ok := rows[pattern]
		switch {
		case !ok:
			t.Errorf("chart row %q is not a row of TestAccessPatterns", pattern)
		case want != op:
			t.Errorf("chart row %q says %s, the test measures %s", pattern, op, want)
		}
		typ, name, _ := strings.Cut(method, ".")
		name, _, _ = strings.Cut(name, "(")
		if rt, ok := types[typ]; !ok {
			t.Errorf("chart row %q: %s is not a store type", pattern, typ)
		} else if _, ok := rt.MethodByName(name); !ok {
			t.Errorf("chart row %q: store.%s has no method %s", pattern, typ, name)
		}
	}
	for p := range rows {
		if !seen[p] && !strings.HasPrefix(p, "AP5") { // AP5, a write, is in the write chart
			t.Errorf("TestAccessPatterns row %q is not in the chart", p)
		}
	}
}

// TestKeysBuiltInKeysGo: docs/data-model.md says keys are built in one
// place, keys.go: no other file of the store spells a key part (a string
// literal with an upper-case name and a #).
func TestKeysBuiltInKeysGo(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	keyPart := regexp.MustCompile(`"[A-Z]*#[A-Z]*`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "keys.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if code, _, _ := strings.Cut(line, "//"); keyPart.MatchString(code) {
				t.Errorf("%s:%d builds a key outside keys.go: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
