//go:build unix

package main

import (
	"context"
	"net"
	"os/exec"
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
