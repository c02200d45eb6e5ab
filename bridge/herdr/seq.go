package herdr

import "time"

// maxSeqWait bounds how long next waits for the clock to pass the last seq.
// Beyond it the clock must have stepped back, and waiting would stall
// reports for as long as the step.
const maxSeqWait = 5 * time.Millisecond

// seqClock hands out the seq of reports and releases: microseconds since the
// epoch (the Go form of what Herdr's own Pi integration does, §6.3).
//
// Herdr keeps the last accepted seq per pane and source across runs and a
// release does not reset it (§11.4), so the next run of herdr-pi in the same
// pane must start above this run's last seq. seqClock guarantees it by never
// running ahead of the clock: a seq is a clock reading taken strictly after
// the previous seq's reading and after the clock was first read. Any later
// run reads a later clock, so its seqs are higher. Two seqs within one tick
// of the clock wait for the next tick instead of counting up (which is what
// could put a run ahead of the clock and let the next run fall below it).
type seqClock struct {
	now   func() time.Time
	sleep func(time.Duration)
	floor uint64 // the next seq must be above this
}

func newSeqClock(now func() time.Time, sleep func(time.Duration)) *seqClock {
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = time.Sleep
	}
	return &seqClock{now: now, sleep: sleep, floor: micros(now())}
}

func micros(t time.Time) uint64 {
	us := t.UnixMicro()
	if us < 0 {
		return 0
	}
	return uint64(us)
}

// next returns a seq above every seq returned before.
func (c *seqClock) next() uint64 {
	deadline := time.Duration(0)
	for {
		s := micros(c.now())
		if s > c.floor {
			c.floor = s
			return s
		}
		wait := time.Duration(c.floor-s+1) * time.Microsecond
		if deadline+wait > maxSeqWait {
			// The clock went back: stay increasing, if ahead of it.
			c.floor++
			return c.floor
		}
		deadline += wait
		c.sleep(wait)
	}
}
