package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

const (
	question   = "I found two candidates for the flaky test. Which file should I edit: api_test.go or store_test.go?"
	finalReply = "Fixed the race in the file you named: the test now waits for the server to listen. All tests pass."
)

type agentScreen struct {
	w          io.Writer
	rows, cols int
	chat       []string // finished lines
	partial    string   // the reply while it streams
	input      string
	busy       bool
	frame      int
	cwd        string
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// draw repaints the whole screen in one synchronized update, as Pi does.
func (s *agentScreen) draw() {
	var b strings.Builder
	b.WriteString("\x1b[?2026h\x1b[?25l")
	// A row wider than the screen would wrap onto the next and, at the
	// bottom, scroll the title away: each is cut to the width, as Pi's are.
	line := func(row int, text string) {
		fmt.Fprintf(&b, "\x1b[%d;1H\x1b[2K%s", row, ansi.Truncate(text, s.cols, ""))
	}
	line(1, " \x1b[1mpi\x1b[0m demo agent \x1b[2m(scripted: no model, no network)\x1b[0m")
	chat := s.chat
	if s.partial != "" {
		chat = append(slices.Clip(chat), s.wrap("", s.partial)...)
	}
	chatTop, chatRows := 3, s.rows-7
	start := max(0, len(chat)-chatRows)
	for i := 0; i < chatRows; i++ {
		text := ""
		if start+i < len(chat) {
			text = chat[start+i]
		}
		line(chatTop+i, text)
	}
	rule := strings.Repeat("─", s.cols)
	top := rule
	if s.busy {
		top = "── " + spinner[s.frame%len(spinner)] + " Working " + strings.Repeat("─", max(s.cols-12, 3))
	}
	line(s.rows-3, top)
	line(s.rows-2, " "+s.input)
	line(s.rows-1, rule)
	line(s.rows, "\x1b[2m"+s.cwd+"\x1b[0m")
	fmt.Fprintf(&b, "\x1b[%d;%dH\x1b[?25h\x1b[?2026l", s.rows-2, 2+len([]rune(s.input)))
	_, _ = io.WriteString(s.w, b.String())
}

// say adds a message to the chat and a blank line after it.
func (s *agentScreen) say(prefix, text string) {
	s.chat = append(s.chat, s.wrap(prefix, text)...)
	s.chat = append(s.chat, "")
}

// wrap breaks text to the width with Pi's one-column indent.
func (s *agentScreen) wrap(prefix, text string) []string {
	var lines []string
	cur := prefix
	for _, w := range strings.Fields(text) {
		if len([]rune(cur))+len([]rune(w))+1 > s.cols-2 && strings.TrimSpace(cur) != "" {
			lines = append(lines, " "+cur)
			cur = ""
		}
		if cur != "" && cur != prefix {
			cur += " "
		}
		cur += w
	}
	if cur != "" {
		lines = append(lines, " "+cur)
	}
	return lines
}

// fakeProbe speaks the probe's side of the control protocol.
type fakeProbe struct{ conn net.Conn }

func dialProbe(getenv func(string) string) *fakeProbe {
	ep, ok := control.EndpointFromEnv(getenv)
	if !ok {
		return &fakeProbe{}
	}
	conn, err := net.DialTimeout("unix", ep.Socket, time.Second)
	if err != nil {
		return &fakeProbe{}
	}
	p := &fakeProbe{conn: conn}
	p.send(control.Message{Type: control.TypeHello, Token: ep.Token, Role: control.RoleProbe, PID: os.Getpid(), Version: control.ProtocolVersion})
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := bufio.NewReaderSize(conn, control.MaxLine).ReadSlice('\n'); err != nil {
		conn.Close()
		return &fakeProbe{}
	}
	return p
}

func (p *fakeProbe) send(m control.Message) {
	if p.conn == nil {
		return
	}
	if b, err := control.Encode(m); err == nil {
		_, _ = p.conn.Write(b)
	}
}

func (p *fakeProbe) event(name string, data any) {
	raw, _ := json.Marshal(data)
	p.send(control.Message{Type: control.TypeEvent, Name: name, Data: raw})
}

func (p *fakeProbe) close() {
	if p.conn != nil {
		p.conn.Close()
	}
}

// RunAgent is the demo agent, standing in for Pi in `herdr-pi demo`: it
// draws a Pi-like screen on out (chat, the editor between two rules, the
// working spinner in the top rule as Pi 1.6 does), reads what is typed on
// the terminal in, and tells the wrapper what Pi's probe would tell it over
// the control socket named in the environment (getenv). It has no model
// and no network: its two replies are scripted.
func RunAgent(ctx context.Context, in *os.File, out io.Writer, getenv func(string) string) error {
	fd := int(in.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return fmt.Errorf("demo-agent needs a terminal: %w", err)
	}
	raw := *old
	raw.Lflag &^= unix.ECHO | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Iflag &^= unix.ICRNL | unix.IXON
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	_ = unix.IoctlSetTermios(fd, unix.TCSETS, &raw)
	defer unix.IoctlSetTermios(fd, unix.TCSETS, old)

	rows, cols := 16, 72
	if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil && ws.Row >= 10 && ws.Col >= 30 {
		rows, cols = int(ws.Row), int(ws.Col)
	}
	cwd, _ := os.Getwd()
	s := &agentScreen{w: out, rows: rows, cols: cols, cwd: cwd}
	fmt.Fprint(out, "\x1b]0;π - demo\x07\x1b[2J")
	s.draw()

	probe := dialProbe(getenv)
	defer probe.close()
	probe.event(control.EvSessionStart, map[string]any{"reason": "startup", "mode": "tui", "hasUI": true, "cwd": cwd})

	keys := make(chan byte, 64)
	go func() { // ends when the terminal closes under it, at exit
		buf := make([]byte, 64)
		for {
			n, err := in.Read(buf)
			for _, c := range buf[:n] {
				keys <- c
			}
			if err != nil {
				close(keys)
				return
			}
		}
	}()
	readLine := func() (string, bool) {
		for {
			select {
			case <-ctx.Done():
				return "", false
			case c, ok := <-keys:
				if !ok {
					return "", false
				}
				switch {
				case c == '\r' || c == '\n':
					line := s.input
					s.input = ""
					s.draw()
					return line, true
				case c == 0x7f || c == 0x08:
					if r := []rune(s.input); len(r) > 0 {
						s.input = string(r[:len(r)-1])
					}
				case c == 0x03 || c == 0x04:
					return "", false
				case c >= 0x20:
					s.input += string(rune(c))
				}
				s.draw()
			}
		}
	}
	work := func(d time.Duration) {
		s.busy = true
		for end := time.Now().Add(d); time.Now().Before(end); s.frame++ {
			s.draw()
			time.Sleep(80 * time.Millisecond)
		}
	}
	stream := func(text string) {
		words := strings.Fields(text)
		for i := range words {
			s.partial = strings.Join(words[:i+1], " ")
			s.frame++
			s.draw()
			time.Sleep(60 * time.Millisecond)
		}
		s.partial = ""
		s.say("", text)
	}
	run := func(prompt, answer string, inputNeeded bool) {
		s.say("› ", prompt)
		probe.event(control.EvAgentStart, map[string]any{})
		work(1800 * time.Millisecond)
		stream(answer)
		s.busy = false
		s.draw()
		probe.event(control.EvAgentEnd, map[string]any{"stopReason": "stop", "inputNeeded": inputNeeded})
		probe.event(control.EvAgentSettled, map[string]any{"idle": true, "inputNeeded": inputNeeded})
	}

	prompt, ok := readLine()
	if !ok {
		return nil
	}
	// The marker that ends this reply is hidden from the screen, as the
	// probe hides it in Pi; the probe reports it.
	run(prompt, question, true)
	answer, ok := readLine()
	if !ok {
		return nil
	}
	run(answer, finalReply, false)
	time.Sleep(1500 * time.Millisecond)
	probe.event(control.EvSessionShutdown, map[string]any{"reason": "quit"})
	return nil
}
