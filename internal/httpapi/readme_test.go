package httpapi_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRequestPathDocumented: the README's request path lists every
// middleware New installs (every e.Use of server.go), in their order.
func TestRequestPathDocumented(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "server.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var code []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "New" {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			if callee(call) != "e.Use" {
				return true
			}
			code = append(code, callee(call.Args[0]))
			return true
		})
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme[strings.Index(string(readme), "## The request path"):])
	var doc []string
	for _, m := range regexp.MustCompile("(?m)^\\d+\\. `([A-Za-z.]+)`").FindAllStringSubmatch(section, -1) {
		doc = append(doc, m[1])
	}
	if len(code) < 10 || !slices.Equal(doc, code) {
		t.Errorf("README's request path lists\n%v\nserver.go's New installs\n%v", doc, code)
	}
}

// callee names what an expression calls or is: "f" for f(...) or f,
// "pkg.F" for pkg.F(...).
func callee(e ast.Expr) string {
	if c, ok := e.(*ast.CallExpr); ok {
		e = c.Fun
	}
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			return id.Name + "." + x.Sel.Name
		}
	}
	return ""
}
