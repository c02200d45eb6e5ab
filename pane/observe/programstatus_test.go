package observe

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/pane/state"
)

// report is a status report as Pi 1.6.0 formats one (pi-agent.md §10).
func report(st, kind, msg string) string {
	s := "\x1b]7501;state=" + st + ":app=pi"
	if kind != "" {
		s += ":kind=" + kind
	}
	if msg != "" {
		s += ":msg=" + base64.StdEncoding.EncodeToString([]byte(msg))
	}
	return s + "\x1b\\"
}

// scanAll scans the chunks in order and returns the reports.
func scanAll(chunks ...[]byte) []state.ProgramStatus {
	var s statusScanner
	var got []state.ProgramStatus
	for _, c := range chunks {
		s.scan(c, func(r state.ProgramStatus) { got = append(got, r) })
	}
	return got
}

func TestStatusReports(t *testing.T) {
	long := strings.Repeat("é", 1500) // 3000 bytes: cut to 2048, on a character
	cases := []struct {
		name, in string
		want     []state.ProgramStatus
	}{
		{"Pi's working", "x" + report("working", "", "my session") + "y",
			[]state.ProgramStatus{{State: "working", App: "pi", Message: "my session"}}},
		{"blocked with kind", report("blocked", "permission", "Delete main.go?"),
			[]state.ProgramStatus{{State: "blocked", App: "pi", Kind: "permission", Message: "Delete main.go?"}}},
		{"BEL ends it too", "\x1b]7501;state=idle\a", []state.ProgramStatus{{State: "idle"}}},
		{"the query is not a report", "\x1b]7501;?\x1b\\\x1b[c", nil},
		{"a later query form is not either", "\x1b]7501;?v=2\x1b\\", nil},
		{"unknown state", "\x1b]7501;state=sleeping\x1b\\", nil},
		{"no state", "\x1b]7501;app=pi:msg=aGk=\x1b\\", nil},
		{"clear", report("clear", "", ""), []state.ProgramStatus{{State: "clear", App: "pi"}}},
		{"unknown keys skipped, bad app and kind left out", "\x1b]7501;x=1:state=done:app=p i:kind=" + strings.Repeat("k", 33) + ":y\x1b\\",
			[]state.ProgramStatus{{State: "done"}}},
		{"unpadded base64", "\x1b]7501;state=error:msg=aGk\x1b\\", []state.ProgramStatus{{State: "error", Message: "hi"}}},
		{"undecodable msg", "\x1b]7501;state=error:msg=!!\x1b\\", []state.ProgramStatus{{State: "error"}}},
		{"control characters become spaces", report("blocked", "question", "a\x1b[31mb\tc\u0085d"),
			[]state.ProgramStatus{{State: "blocked", App: "pi", Kind: "question", Message: "a [31mb c d"}}},
		{"invalid UTF-8", "\x1b]7501;state=done:msg=" + base64.StdEncoding.EncodeToString([]byte("a\xffb")) + "\x1b\\",
			[]state.ProgramStatus{{State: "done", Message: "a\uFFFDb"}}},
		{"long message cut on a character", report("done", "", long),
			[]state.ProgramStatus{{State: "done", App: "pi", Message: strings.Repeat("é", 1024)}}},
		{"ESC cancels; the next intro counts", "\x1b]7501;state=working\x1b]7501;state=idle\x1b\\",
			[]state.ProgramStatus{{State: "idle"}}},
		{"a control character cancels", "\x1b]7501;state=working\n\x1b]7501;state=done\a",
			[]state.ProgramStatus{{State: "done"}}},
		{"other OSCs and a near miss", "\x1b]0;title\a\x1b]750;state=idle\a\x1b]75011;state=idle\a", nil},
		{"a body at the limit", "\x1b]7501;state=done:x=" + strings.Repeat("a", maxStatusBody-len("state=done:x=")) + "\a",
			[]state.ProgramStatus{{State: "done"}}},
		{"a body over the limit", "\x1b]7501;state=done:x=" + strings.Repeat("a", maxStatusBody-len("state=done:x=")+1) + "\a", nil},
		// A bare "]7501;" (Pi printing this very protocol's docs, say) is
		// text: the report after it in the same read still counts.
		{"a bare ]7501; before a report", "see ]7501;state=idle " + report("working", "", ""),
			[]state.ProgramStatus{{State: "working", App: "pi"}}},
		// CSI, not OSC: whichever read it is cut across, never a report.
		{"ESC [ 7501; is not an intro", "\x1b[7501;state=done\a", nil},
		{"DEL cancels like any control", "\x1b]7501;state=done:x=\x7f\a", nil},
		{"app and kind may have - . + _", "\x1b]7501;state=blocked:app=pi-dev.1+x_y:kind=ask-user\a",
			[]state.ProgramStatus{{State: "blocked", App: "pi-dev.1+x_y", Kind: "ask-user"}}},
		{"message trimmed, controls at its ends included", report("done", "", "\n  all done \t"),
			[]state.ProgramStatus{{State: "done", App: "pi", Message: "all done"}}},
		{"several", report("working", "", "") + "text" + report("blocked", "auth", "Log in") + report("working", "", ""),
			[]state.ProgramStatus{{State: "working", App: "pi"}, {State: "blocked", App: "pi", Kind: "auth", Message: "Log in"}, {State: "working", App: "pi"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := scanAll([]byte(c.in)); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("%q:\n got %+v\nwant %+v", c.in, got, c.want)
			}
			// Cut anywhere, once or twice, the stream says the same.
			in := []byte(c.in)
			for i := 0; i <= len(in) && len(in) < 600; i++ {
				for j := i; j <= len(in); j++ {
					if got := scanAll(in[:i], in[i:j], in[j:]); !reflect.DeepEqual(got, c.want) {
						t.Fatalf("%q cut at %d and %d:\n got %+v\nwant %+v", c.in, i, j, got, c.want)
					}
				}
			}
			if got := scanAll(bytewise(in)...); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("%q byte by byte:\n got %+v\nwant %+v", c.in, got, c.want)
			}
		})
	}
}

func bytewise(p []byte) [][]byte {
	out := make([][]byte, len(p))
	for i := range p {
		out[i] = p[i : i+1]
	}
	return out
}

// A sequence that never ends holds no more than the limit.
func TestStatusScannerIsBounded(t *testing.T) {
	var s statusScanner
	s.scan([]byte("\x1b]7501;state="), func(state.ProgramStatus) {})
	for range 1000 {
		s.scan(bytes.Repeat([]byte("a"), 1000), func(state.ProgramStatus) {})
		if cap(s.held) > 2*(maxStatusBody+len(statusIntro)) {
			t.Fatalf("holds %d bytes", cap(s.held))
		}
	}
}

// oracle finds the reports of a whole stream the slow way, byte by byte:
// the reference the chunked scanner must agree with.
func oracle(data []byte) []state.ProgramStatus {
	var out []state.ProgramStatus
	for i := 0; i < len(data); {
		if !bytes.HasPrefix(data[i:], statusIntro) {
			i++
			continue
		}
		start := i + len(statusIntro)
		next := len(data)
		for j := start; j < len(data); j++ {
			c := data[j]
			if c == 0x07 || c == 0x1b && j+1 < len(data) && data[j+1] == '\\' {
				if r, ok := parseStatus(data[start:j]); ok {
					out = append(out, r)
				}
				next = j + 1
				if c == 0x1b {
					next++
				}
				break
			}
			if c < 0x20 || c > 0x7e || j-start >= maxStatusBody {
				next = j
				break
			}
		}
		i = next
	}
	return out
}

// cutAt splits data into chunks whose sizes come from cuts (1–64 bytes).
func cutAt(data, cuts []byte) [][]byte {
	var chunks [][]byte
	for k := 0; len(data) > 0; k++ {
		n := len(data)
		if len(cuts) > 0 {
			n = min(n, int(cuts[k%len(cuts)])%64+1)
		}
		chunks = append(chunks, data[:n])
		data = data[n:]
	}
	return chunks
}

func FuzzStatusScanner(f *testing.F) {
	f.Add([]byte(report("working", "", "s")+"\x1b[2K"+report("blocked", "question", "Pick?")), []byte{3, 1, 7})
	f.Add([]byte("\x1b]7501;state=done\x1b\x1b]7501;state=idle\x1b\\"), []byte{17, 1})
	f.Add([]byte("\x1b]7501\x1b]7501;state=idle\a"), []byte{1})
	f.Add([]byte("\x1b]7501;?\x1b\\\x1b]7501;state=clear:app=pi\x1b\\"), []byte{9, 2})
	f.Add([]byte("]7501;state=idle\ax]7501;state=idle\a\x1b\x1b]7501;state=done\a"), []byte{0, 16, 1})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		want := oracle(data)
		got := scanAll(cutAt(data, cuts)...)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("stream %q in chunks %v:\n got %+v\nwant %+v", data, cuts, got, want)
		}
		for _, r := range got {
			if strings.ContainsFunc(r.Message, func(c rune) bool { return c < 0x20 || c == 0x7f || c >= 0x80 && c < 0xa0 }) ||
				len(r.Message) > maxStatusMessage || !validUTF8(r.Message) {
				t.Fatalf("message %q not fit for a report", r.Message)
			}
		}
	})
}

func validUTF8(s string) bool { return strings.ToValidUTF8(s, "") == s }

// Reports written into the tap reach the machine, cut across writes and
// batches; the screen is not heard while they count. A flood bigger than
// the tap (which keeps only its newest bytes for the screen) loses none of
// them: they are read as the bytes are offered, before the tap's limit.
func TestPipelineReadsStatusReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, transitions := startRecorded()
		defer o.Stop()
		step := func(s string) {
			o.Tap.Write([]byte(s))
			synctest.Wait()
		}
		working := report("working", "", "my session")
		step("\x1b[Hhello" + working[:5])
		step(working[5:] + "\x1b[2J")
		time.Sleep(time.Second) // the idle-looking screen is not heard
		step(report("blocked", "question", "Which file?"))
		step(report("working", "", "my session")) // the dialog closed; the run goes on
		step(report("done", "", "my session")[:len(report("done", "", "my session"))-1])
		step("\\")
		time.Sleep(time.Second)
		// A flood bigger than the tap, the report at its very start.
		step(report("working", "", "") + strings.Repeat("x", 2<<20))
		time.Sleep(time.Second)
		want := "working(program-status:working) blocked(program-status:blocked) working(program-status:working) idle(program-status:done) working(program-status:working)"
		if s := transitions(); s != want {
			t.Fatalf("transitions\n got %s\nwant %s", s, want)
		}
		if s := o.Machine.Snapshot(); s.ProgramStatus == nil || s.ProgramStatus.State != "working" {
			t.Fatalf("after the flood: %+v", s)
		}
	})
}

// Scanning output without status reports costs a vectorised search per
// chunk: compare with bytes.IndexByte over the same bytes (go test -bench
// StatusScan ./pane/observe/).
func BenchmarkStatusScan(b *testing.B) {
	chunk := piLikeOutput(32 << 10)
	b.Run("scan", func(b *testing.B) {
		var s statusScanner
		b.SetBytes(int64(len(chunk)))
		for b.Loop() {
			s.scan(chunk, func(state.ProgramStatus) { b.Fatal("a report") })
		}
	})
	// A flood of base64 lines, as make bench sends through the wrapper.
	r := rand.New(rand.NewPCG(3, 4))
	raw := make([]byte, 24<<10)
	for i := range raw {
		raw[i] = byte(r.IntN(256))
	}
	b64 := []byte(base64.StdEncoding.EncodeToString(raw))
	b.Run("scan-base64", func(b *testing.B) {
		var s statusScanner
		b.SetBytes(int64(len(b64)))
		for b.Loop() {
			s.scan(b64, func(state.ProgramStatus) { b.Fatal("a report") })
		}
	})
	b.Run("esc-led-search", func(b *testing.B) {
		b.SetBytes(int64(len(chunk)))
		for b.Loop() {
			if bytes.Index(chunk, statusIntro) >= 0 {
				b.Fatal("a report")
			}
		}
	})
	b.Run("indexbyte-baseline", func(b *testing.B) {
		b.SetBytes(int64(len(chunk)))
		for b.Loop() {
			if bytes.IndexByte(chunk, 0) >= 0 {
				b.Fatal("NUL")
			}
		}
	})
}

// piLikeOutput is n bytes of dense TUI output like Pi's recordings in
// e2e/testdata/pi (an ESC in every 16 bytes, a ']' in every 250, a '7' in
// every 715): styled text with an escape sequence every few characters,
// and other OSCs.
func piLikeOutput(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	var buf bytes.Buffer
	for buf.Len() < n {
		switch k := r.IntN(40); {
		case k < 12 && r.IntN(18) == 0:
			buf.WriteString("\x1b[38;2;170;130;140m")
		case k < 12:
			buf.WriteString("\x1b[38;2;120;130;140m")
		case k < 18:
			buf.WriteString("\x1b[0m\x1b[2K\r\n")
		case k == 18:
			buf.WriteString("\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\")
		default:
			buf.WriteString(strings.Repeat("word ", 1+r.IntN(2)))
		}
	}
	return buf.Bytes()[:n]
}

func TestPiLikeOutputIsLikePi(t *testing.T) {
	out := piLikeOutput(1 << 20)
	esc, br, seven := len(out)/bytes.Count(out, []byte{0x1b}), len(out)/bytes.Count(out, []byte("]")), len(out)/bytes.Count(out, []byte("7"))
	if esc < 8 || esc > 20 || br < 150 || br > 400 || seven < 400 || seven > 1200 {
		t.Fatalf("one ESC in %d bytes, one ] in %d, one 7 in %d", esc, br, seven)
	}
}

// A report reaches the machine as soon as it is written, also while the
// screen rests after a flood (it skips most of 100 KiB and rests half a
// second) and right after an ordinary frame.
func TestReportsDoNotWaitForTheScreen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, transitions := startRecorded()
		defer o.Stop()
		o.Tap.Write(bytes.Repeat([]byte("x"), 100<<10))
		synctest.Wait()
		o.Tap.Write([]byte(report("working", "", "")))
		synctest.Wait()
		if got := transitions(); got != "working(program-status:working)" {
			t.Fatalf("transitions %q while the screen rests", got)
		}
		time.Sleep(2 * time.Second)
		o.Tap.Write(piLikeOutput(4 << 10))
		synctest.Wait()
		o.Tap.Write([]byte(report("blocked", "question", "Which?")))
		synctest.Wait()
		if got := transitions(); !strings.HasSuffix(got, "blocked(program-status:blocked)") {
			t.Fatalf("transitions %q after the report that followed a frame", got)
		}
	})
}

// Reports queue for the goroutine that delivers them, in order. Output of
// nothing but reports, faster than they are delivered, keeps the newest
// reportQueue and tells the machine some were lost, before the newest.
func TestReportsKeepTheNewestWhenTheyPileUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log []string
		r := newReports(func() { log = append(log, "lost") }, nil)
		r.ReportTo(func(p state.ProgramStatus) { log = append(log, p.Message) })
		var out strings.Builder
		for i := range reportQueue + 10 {
			out.WriteString(report("working", "", fmt.Sprint(i)))
		}
		r.watch([]byte(out.String())) // one chunk: nothing delivered meanwhile
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go r.run(ctx)
		synctest.Wait()
		if len(log) != reportQueue+1 || log[0] != "lost" || log[1] != "10" || log[reportQueue] != fmt.Sprint(reportQueue+9) {
			t.Fatalf("delivered %q", log)
		}
	})
}

// Reports found just before the Observer stops are still delivered: Pi
// writes its last ("done") as it exits.
func TestReportsQueuedAtStopAreDelivered(t *testing.T) {
	for range 100 { // the stop may come before or after the wake-up
		var got []string
		r := newReports(func() {}, nil)
		r.ReportTo(func(p state.ProgramStatus) { got = append(got, p.State) })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); r.run(ctx) }()
		r.watch([]byte(report("done", "", "")))
		cancel()
		<-done
		if !reflect.DeepEqual(got, []string{"done"}) {
			t.Fatalf("delivered %q", got)
		}
	}
}
