package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// testSupport are the packages under internal/ that only tests import,
// and so may scan (to check the table after a test).
var testSupport = map[string]bool{"storetest": true, "apitest": true}

// TestNoScan: the product never Scans the table. No non-test file of a
// package under internal/ but the test-support ones calls Scan (with
// arguments: bufio's Scan takes none) or NewScanPaginator, or builds a
// ScanInput.
func TestNoScan(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && testSupport[d.Name()]:
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var sel *ast.SelectorExpr
			switch n := n.(type) {
			case *ast.CallExpr:
				if s, ok := n.Fun.(*ast.SelectorExpr); ok && (s.Sel.Name == "Scan" && len(n.Args) > 0 || s.Sel.Name == "NewScanPaginator") {
					sel = s
				}
			case *ast.CompositeLit:
				if s, ok := n.Type.(*ast.SelectorExpr); ok && s.Sel.Name == "ScanInput" {
					sel = s
				}
			}
			if sel != nil {
				t.Errorf("%s: %s: only test-support packages may scan", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
