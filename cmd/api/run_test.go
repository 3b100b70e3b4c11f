//go:build unix

package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/dynamotest"
)

// TestRunRefusesTakenAddresses: `make run` (scripts/run.sh) with ADDR or
// METRICS_ADDR taken by another process fails at once, with a hint, and
// never prints its "tenantd is up" banner (its readiness probe would reach
// the other process).
func TestRunRefusesTakenAddresses(t *testing.T) {
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go func() { // the other process: accepts and keeps connections
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	taken := other.Addr().String()
	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}
	for _, name := range []string{"ADDR", "METRICS_ADDR"} {
		t.Run(name+" taken", func(t *testing.T) {
			env := map[string]string{"ADDR": free(), "METRICS_ADDR": free()}
			env[name] = taken
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound for a hang
			defer cancel()
			cmd := exec.CommandContext(ctx, "../../scripts/run.sh")
			cmd.Env = append(cmd.Environ(), "ADDR="+env["ADDR"], "METRICS_ADDR="+env["METRICS_ADDR"],
				"DYNAMODB_ENDPOINT="+dynamotest.Endpoint(), "DYNAMODB_TABLE="+newTable(t),
				"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_REGION=us-east-1")
			cmd.WaitDelay = 5 * time.Second
			out, err := cmd.CombinedOutput()
			if strings.Contains(string(out), "tenantd is up") {
				t.Errorf("the banner was printed with %s=%s taken:\n%s", name, taken, out)
			}
			if err == nil || !strings.Contains(string(out), name+" "+taken+" is already in use") {
				t.Errorf("run.sh with %s=%s taken: %v, want a failure that names it:\n%s", name, taken, err, out)
			}
		})
	}
}

// TestRunSetsDocumentedDevDefaults: every dev default the README's
// configuration table marks with * ("`10s` (*0s)") is the one
// scripts/run.sh exports, and every variable run.sh gives a dev default is
// marked so: the docs and `make run` cannot disagree.
func TestRunSetsDocumentedDevDefaults(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("../../scripts/run.sh")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z0-9_]+)` \\| [^|]*\\(\\*([^)]+)\\)").FindAllStringSubmatch(string(readme), -1) {
		documented[m[1]] = m[2]
	}
	set := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*export ([A-Z0-9_]+)="(?:\$\{[A-Z0-9_]+:-)?([^"}]*)\}?"`).FindAllStringSubmatch(string(script), -1) {
		set[m[1]] = m[2]
	}
	if len(documented) == 0 || len(set) == 0 {
		t.Fatalf("nothing to compare: %d documented dev defaults, %d set by run.sh", len(documented), len(set))
	}
	for name, want := range documented {
		got, ok := set[name]
		switch {
		case !ok:
			t.Errorf("README: make run sets %s (*%s); scripts/run.sh does not", name, want)
		case want != "dev value" && got != want:
			t.Errorf("README: make run sets %s=%s; scripts/run.sh sets %q", name, want, got)
		}
	}
	for name, got := range set {
		if _, ok := documented[name]; !ok && name != "DYNAMODB_ENDPOINT" {
			t.Errorf("scripts/run.sh sets %s=%q; the README's table does not mark it (*)", name, got)
		}
	}
}
