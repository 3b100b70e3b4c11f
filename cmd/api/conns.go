package main

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// connGuard keeps the connection slots (MAX_CONNECTIONS) for clients that
// use them. Under pressure (at least high connections open) it closes the
// connections that hold a slot without using it: keep-alive connections
// idle for idleGrace, and connections that have not begun a request within
// grace. Without it, 1,024 sockets that each sent one
// unauthenticated GET and then idled locked every other client out for
// IDLE_TIMEOUT. Connections that are reading a body or writing an answer
// are left to READ_TIMEOUT and WRITE_TIMEOUT.
type connGuard struct {
	high      int           // pressure starts at this many open connections
	grace     time.Duration // a new connection's time to begin a request, under pressure
	idleGrace time.Duration // a keep-alive connection's time to begin its next one, under pressure

	mu    sync.Mutex
	conns map[net.Conn]connInfo
}

type connInfo struct {
	state http.ConnState
	since time.Time
}

func newConnGuard(maxConns int, grace, idleGrace time.Duration) *connGuard {
	return &connGuard{high: max(1, maxConns*3/4), grace: grace, idleGrace: idleGrace, conns: map[net.Conn]connInfo{}}
}

// track is the http.Server's ConnState hook.
func (g *connGuard) track(c net.Conn, s http.ConnState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch s {
	case http.StateClosed, http.StateHijacked:
		delete(g.conns, c)
		return
	}
	now := time.Now()
	g.conns[c] = connInfo{state: s, since: now}
	if s == http.StateNew && len(g.conns) >= g.high {
		g.reapLocked(now) // make room for the newcomer
	}
}

// reap closes, under pressure, the connections idle for idleGrace and the
// new ones silent for grace. (Closing an idle keep-alive connection is
// what IDLE_TIMEOUT does anyway; a client reconnects when it needs to.)
func (g *connGuard) reap(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.conns) >= g.high {
		g.reapLocked(now)
	}
}

func (g *connGuard) reapLocked(now time.Time) {
	for c, info := range g.conns {
		if (info.state == http.StateIdle && now.Sub(info.since) >= g.idleGrace) || (info.state == http.StateNew && now.Sub(info.since) >= g.grace) {
			delete(g.conns, c)
			_ = c.Close()
		}
	}
}

// run reaps every tick until stop is closed.
func (g *connGuard) run(tick time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			g.reap(now)
		}
	}
}
