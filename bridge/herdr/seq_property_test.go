package herdr_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// wireLog records every request line in the order herdr-pi wrote it: the
// order seqs were produced in, which the fake's arrival order need not be
// (a connection cut off mid-flight can be read after a later one).
type wireLog struct {
	mu    sync.Mutex
	lines [][]byte
}

type recConn struct {
	net.Conn
	log *wireLog
}

func (c recConn) Write(p []byte) (int, error) {
	c.log.mu.Lock()
	c.log.lines = append(c.log.lines, append([]byte(nil), p...))
	c.log.mu.Unlock()
	return c.Conn.Write(p)
}

func (w *wireLog) dial(ctx context.Context, sock string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, err
	}
	return recConn{c, w}, nil
}

// TestSeqNeverGoesBack is a property test: over random interleavings of
// reports, bursts, resyncs, Herdr failures and herdr-pi restarts (a clean
// exit with release, or a crash without), on clocks of various coarseness,
// no report or release is ever produced with a seq that is not above every
// seq produced before it, except the identical request sent again after a
// lost reply.
func TestSeqNeverGoesBack(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SEQ_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (rerun with SEQ_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	clocks := map[string]func() time.Time{
		"real":        time.Now,
		"coarse-1ms":  func() time.Time { return time.Now().Truncate(time.Millisecond) },
		"coarse-10ms": func() time.Time { return time.Now().Truncate(10 * time.Millisecond) },
	}
	states := []string{"idle", "working", "blocked", "unknown"}
	runs, restarts, produced := 0, 0, 0
	for name, clock := range clocks {
		for iter := 0; iter < 12; iter++ {
			s := herdrtest.Start(t)
			wl := &wireLog{}
			newR := func() *herdr.Reporter {
				runs++
				return herdr.NewReporter(herdr.ReporterConfig{
					Client: &herdr.Client{Socket: s.SocketPath(), Dial: wl.dial},
					PaneID: s.PaneID(), Source: "custom:herdr-pi", Agent: "pi",
					Now: clock, MinInterval: time.Duration(rng.IntN(3)) * time.Millisecond,
					RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond,
				})
			}
			r := newR()
			for op := 0; op < 40; op++ {
				switch k := rng.IntN(20); {
				case k < 6:
					r.Report(states[rng.IntN(4)], []string{"", "msg"}[rng.IntN(2)])
				case k < 8:
					for i := rng.IntN(50); i > 0; i-- {
						r.Report(states[rng.IntN(4)], "")
					}
				case k == 8:
					r.Resync()
				case k == 9:
					s.SetFault([]herdrtest.Fault{{}, {Kind: herdrtest.FaultGarbage}, {Kind: herdrtest.FaultClose},
						{Kind: herdrtest.FaultCloseMidLine}, {Kind: herdrtest.FaultClose, Count: 1}}[rng.IntN(5)])
				case k == 10:
					restarts++
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
					_ = r.Release(ctx)
					cancel()
					r = newR()
				case k == 11:
					restarts++
					r.Close() // a crash: no release
					r = newR()
				default:
					time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
				}
			}
			s.SetFault(herdrtest.Fault{})
			r.Report("blocked", "final")
			// A request cut off by a crash can reach Herdr after later ones;
			// its lower seq makes Herdr ignore it, so look for the final
			// report among the accepted ones.
			if !s.Await(3*time.Second, func() bool {
				for _, c := range s.Reports(s.PaneID()) {
					if c.Message == "final" && c.Accepted {
						return s.Pane(s.PaneID()).Status == "blocked"
					}
				}
				return false
			}) {
				checkProduced(t, name, wl)
				for _, c := range s.AgentCalls(s.PaneID()) {
					t.Logf("%s %s %q seq %d accepted %v applied %v", c.Method, c.State, c.Message, c.Seq, c.Accepted, c.Applied)
				}
				t.Fatalf("%s: the final state never arrived; reporter %+v, pane %+v", name, r.Stats(), s.Pane(s.PaneID()))
			}
			if err := r.Release(context.Background()); err != nil {
				t.Fatalf("%s: final release: %v", name, err)
			}
			produced += checkProduced(t, name, wl)
			if st := s.Pane(s.PaneID()); st.Status != "unknown" {
				t.Errorf("%s: after the final release the pane shows %+v", name, st)
			}
			s.Close()
		}
	}
	t.Logf("%d reporter runs, %d restarts, %d requests produced", runs, restarts, produced)
}

func checkProduced(t *testing.T, clock string, wl *wireLog) int {
	t.Helper()
	wl.mu.Lock()
	defer wl.mu.Unlock()
	var maxSeq uint64
	var prev []byte
	for i, line := range wl.lines {
		var req struct {
			Method string `json:"method"`
			Params struct {
				Seq uint64 `json:"seq"`
			} `json:"params"`
		}
		if err := json.Unmarshal(line, &req); err != nil {
			t.Fatalf("%s: line %d: %v", clock, i, err)
		}
		if req.Params.Seq == 0 {
			t.Errorf("%s: %s without a seq", clock, req.Method)
		}
		retry := prev != nil && string(prev) == string(line)
		if req.Params.Seq <= maxSeq && !retry {
			t.Errorf("%s: request %d (%s) has seq %d, not above %d", clock, i, req.Method, req.Params.Seq, maxSeq)
		}
		maxSeq = max(maxSeq, req.Params.Seq)
		prev = line
	}
	return len(wl.lines)
}
