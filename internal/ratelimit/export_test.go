package ratelimit

// Settle waits until no lease of l is in flight: a test with a fake clock
// lets the leases a request started land before it sends the next one.
func (l *Limiter) Settle() {
	if l.g != nil {
		l.g.flights.Wait()
	}
}
