package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestDefaultGCPercent: without GOGC the service runs at defaultGCPercent,
// with it at the operator's; and the default pays its rent: the same
// allocations cost fewer collections than at Go's 100 (GC counts, not
// timings, so the test does not depend on the machine's speed).
func TestDefaultGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	setGCPercent(func(string) (string, bool) { return "", false })
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, defaultGCPercent)
	}
	setGCPercent(func(string) (string, bool) { return "50", true })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC set: GC percent changed to %d; it is the operator's", got)
	}
	collections := func(percent int) uint32 {
		debug.SetGCPercent(percent)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		keep := make([][]byte, 0, 64)
		for i := range 20_000 { // 80 MB of short-lived 4 KiB buffers, a little kept
			b := make([]byte, 4096)
			if i%400 == 0 {
				keep = append(keep, b)
			}
		}
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(keep)
		return after.NumGC - before.NumGC
	}
	at100, atDefault := collections(100), collections(defaultGCPercent)
	if atDefault >= at100 {
		t.Errorf("collections for the same allocations: %d at GOGC=%d, %d at 100: the default saves nothing", atDefault, defaultGCPercent, at100)
	}
	t.Logf("collections: %d at GOGC=100, %d at %d", at100, atDefault, defaultGCPercent)
}
