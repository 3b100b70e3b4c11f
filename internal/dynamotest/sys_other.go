//go:build !linux

package dynamotest

import "os/exec"

// startChild starts cmd. (On Linux it also gets its own process group and a
// parent-death signal; see sys_linux.go.)
func startChild(cmd *exec.Cmd) error { return cmd.Start() }

// killTree kills the process.
func killTree(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// lockInstall is a no-op here: concurrent first installs are not serialized.
func lockInstall(string) (func(), error) { return func() {}, nil }

// listenerOwnedBy cannot tell here.
func listenerOwnedBy(int, int) (owned, known bool) { return false, false }
