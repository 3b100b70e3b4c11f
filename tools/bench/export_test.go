package main

import "testing"

// TestReplaceSection: the export's section of BENCHMARKS.md is replaced
// in place, appended when missing, and kept by the main report.
func TestReplaceSection(t *testing.T) {
	const section = exportSection + "\n\nnew\n"
	for _, c := range []struct{ md, want string }{
		{"# t\n\n## A\n\na\n", "# t\n\n## A\n\na\n\n" + section},
		{"# t\n\n" + exportSection + "\n\nold\n\n## B\n\nb\n", "# t\n\n" + exportSection + "\n\nnew\n\n## B\n\nb\n"},
		{"# t\n\n" + exportSection + "\n\nold\n", "# t\n\n" + section},
	} {
		if got := replaceSection(c.md, exportSection, section); got != c.want {
			t.Errorf("replaceSection(%q):\n got  %q\n want %q", c.md, got, c.want)
		}
	}
}
