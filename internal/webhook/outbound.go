package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Outbound limits: an endpoint has ConnectTimeout to accept the
// connection and Policy.Timeout (15 s by default) to answer; at most
// MaxResponseBytes of its answer are read.
const (
	ConnectTimeout   = 5 * time.Second
	MaxResponseBytes = 64 << 10
)

// refusedRanges are the networks no delivery may reach: private,
// shared (CGNAT), loopback, link-local (the cloud metadata address
// 169.254.169.254 among them), unspecified, multicast and the
// documentation and benchmarking ranges, in IPv4 and IPv6 (and IPv4
// mapped into IPv6), and the IPv6 forms that embed an IPv4 address or
// are deprecated: IPv4-compatible (::/96), IPv4-translated
// (::ffff:0:0:0/96), 6to4 (2002::/16 and its relay 192.88.99.0/24),
// Teredo (2001::/32), ORCHID (2001:10::/28) and site-local (fec0::/10).
var refusedRanges = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
		"224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001:db8::/32", "fc00::/7", "fe80::/10", "ff00::/8",
		"::/96", "::ffff:0:0:0/96", "2002::/16", "192.88.99.0/24", "2001::/32", "2001:10::/28", "fec0::/10",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// privateAddr reports whether a delivery must not reach ip. An address
// with a zone (fe80::1%eth0) is never public, and netip's Contains is
// false for every zoned address, so a zone is refused outright.
func privateAddr(ip netip.Addr) bool {
	if ip.Zone() != "" {
		return true
	}
	ip = ip.Unmap()
	for _, p := range refusedRanges {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

var errPrivate = errors.New("the address is private, loopback, link-local or otherwise not public")

// refusedHost refuses, before anything is resolved, a host that is an
// address refused at connection time or names the local machine. A name
// that resolves to such an address passes here and is refused when the
// client connects (after resolution, so DNS rebinding cannot pass).
func refusedHost(host string, allowPrivate bool) error {
	if allowPrivate {
		return nil
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || strings.HasSuffix(h, ".internal") {
		return errPrivate
	}
	if ip, err := netip.ParseAddr(h); err == nil && privateAddr(ip) {
		return errPrivate
	}
	// No DNS top-level label is numeric: a host like 2130706433, 127.1,
	// 0177.0.0.1 or 0x7f000001 is an IPv4 address in a form some
	// resolvers (inet_aton) accept, and is refused.
	if last := h[strings.LastIndex(h, ".")+1:]; strings.HasPrefix(last, "0x") || strings.Trim(last, "0123456789") == "" {
		if _, err := netip.ParseAddr(h); err != nil {
			return errPrivate
		}
	}
	return nil
}

// NewClient returns the HTTP client of deliveries: it connects only to
// public addresses (checked on the address actually dialled, after DNS
// resolution) unless allowPrivate, follows no redirect, uses no proxy
// from the environment, and gives up after ConnectTimeout to connect and
// total in all.
func NewClient(allowPrivate bool, total time.Duration) *http.Client {
	d := &net.Dialer{Timeout: ConnectTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("webhook: dial %s: %w", address, err)
		}
		if !allowPrivate && privateAddr(ap.Addr()) {
			return fmt.Errorf("webhook: dial %s: %w", address, errPrivate)
		}
		return nil
	}}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		TLSHandshakeTimeout:   ConnectTimeout,
		ResponseHeaderTimeout: total,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       30 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{Transport: tr, Timeout: total,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// drain reads (and discards past MaxResponseBytes) an answer's body.
func drain(r io.Reader) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, MaxResponseBytes))
	return b
}

// isTimeout reports whether err is a deadline that passed.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
