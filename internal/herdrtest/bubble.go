package herdrtest

import "testing"

// StartInBubble starts a fake for a test that runs inside a testing/synctest
// bubble; call it inside the bubble, so the fake's channels and timers
// belong to it. The fake serves in-memory connections only (Dial): its
// socket closes at once, because a goroutine waiting on a real socket
// would keep the bubble's clock from moving. Crash and Restart need the
// socket; simulate an outage with a Dial that fails instead.
func StartInBubble(t testing.TB, opts ...Options) *Server {
	t.Helper()
	s := Start(t, opts...)
	s.lnMu.Lock()
	ln := s.ln // stays set: Dial serves while it is
	s.lnMu.Unlock()
	ln.Close()
	s.wg.Wait() // the accept loop has ended; no connection was accepted
	return s
}
