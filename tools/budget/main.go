// Command budget prints each package's product Go lines against its line
// in BUDGET.md and fails when one grew past it: a package grows only in a
// commit that also says, in BUDGET.md, what its new lines buy. Product
// lines are those of non-test, non-generated Go files outside tools/ and
// the test-support packages. make test runs it first; TestBudget runs the
// same check in go test.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// testSupport are the packages only tests (and tools/) import.
var testSupport = []string{"internal/apitest", "internal/dynamotest", "internal/testkit", "internal/store/storetest"}

var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	report, err := check(root)
	fmt.Print(report)
	if err != nil {
		fmt.Fprintln(os.Stderr, "budget:", err)
		os.Exit(1)
	}
}

// count returns the product lines of each package (directory) under root.
func count(root string) (map[string]int, error) {
	lines := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "tools" || rel == "node_modules" || strings.HasPrefix(d.Name(), ".") && rel != "." || slices.Contains(testSupport, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		head := b
		if i := nthIndex(b, '\n', 20); i >= 0 {
			head = b[:i]
		}
		if generated.Match(head) {
			return nil
		}
		lines[filepath.ToSlash(filepath.Dir(rel))] += bytes.Count(b, []byte("\n"))
		return nil
	})
	return lines, err
}

// nthIndex is the index of the nth c in b, or -1.
func nthIndex(b []byte, c byte, n int) int {
	for i, x := range b {
		if x == c {
			if n--; n == 0 {
				return i
			}
		}
	}
	return -1
}

// budgets reads BUDGET.md's table: | package | budget | what it buys |.
func budgets(root string) (map[string]int, error) {
	f, err := os.Open(filepath.Join(root, "BUDGET.md"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		pkg := strings.Trim(strings.TrimSpace(cells[1]), "`")
		n, err := strconv.Atoi(strings.ReplaceAll(strings.TrimSpace(cells[2]), ",", ""))
		if err != nil {
			return nil, fmt.Errorf("BUDGET.md: %s: %w", pkg, err)
		}
		out[pkg] = n
	}
	return out, sc.Err()
}

// check reports every package against its budget; the error names those
// over it, and those the file does not list.
func check(root string) (string, error) {
	lines, err := count(root)
	if err != nil {
		return "", err
	}
	budget, err := budgets(root)
	if err != nil {
		return "", err
	}
	pkgs := make([]string, 0, len(lines))
	for p := range lines {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "package\tlines\tbudget\tleft\t")
	var over []string
	total, totalBudget := 0, 0
	for _, p := range pkgs {
		n, max := lines[p], budget[p]
		total, totalBudget = total+n, totalBudget+max
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t\n", p, n, max, max-n)
		if _, listed := budget[p]; !listed {
			over = append(over, p+" (not in BUDGET.md)")
		} else if n > max {
			over = append(over, fmt.Sprintf("%s (%d lines, budget %d)", p, n, max))
		}
	}
	fmt.Fprintf(w, "total\t%d\t%d\t%d\t\n", total, totalBudget, totalBudget-total)
	w.Flush()
	if len(over) > 0 {
		return b.String(), fmt.Errorf("over budget: %s; shrink them, or raise their line in BUDGET.md saying what the new lines buy", strings.Join(over, ", "))
	}
	return b.String(), nil
}
