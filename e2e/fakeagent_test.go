package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// fakeAgentMain is a scripted agent. It runs the instructions in the file
// named by its first argument (or "-e INSTR;INSTR…" inline), one per line:
//
//	print TEXT       write TEXT; \e \r \n \t \xHH escapes are decoded
//	sleep DUR        wait
//	size             print "size: ROWS COLS" from the terminal
//	readline         wait for one line (or key) on stdin
//	pi-working DUR [0.73|1.6]   draw Pi's spinner row for DUR, 80 ms a frame
//	pi-idle [0.73|1.6]          draw Pi's idle editor
//	exit N           stop with status N
//	exit-if FILE N   stop with status N when FILE exists
//	kill SIG         send itself a signal (TERM, HUP, INT, KILL)
//	trap SIG         ignore a signal
//	probe            connect to the wrapper's control socket as Pi's probe does
//	event NAME JSON  send one probe event (e.g. event herdr:blocked {"active":true})
//	run CMD ARGS…    run a command (split on spaces) and wait for it; a
//	                 failure ends the agent with status 3
//	raw              put its terminal in raw mode (cfmakeraw: no echo, no
//	                 signals, every input byte as it is)
//	readhex N        read exactly N bytes of input, print them as hex
//	readsum N        read exactly N bytes of input, print "sum: SHA256"
//	flood TEXT       write TEXT (escapes decoded) over and over, from a
//	                 goroutine, until flood-stop; the last write is whole
//	flood-stop       stop the flood and wait for its last write
func fakeAgentMain() {
	var lines []string
	if len(os.Args) >= 4 && os.Args[1] == "-e" && strings.HasSuffix(os.Args[2], ".mjs") {
		// Run as Pi (wrap --agent pi): the probe extension herdr-pi adds
		// is not ours to load.
		os.Args = append(os.Args[:1], os.Args[3:]...)
	}
	switch {
	case len(os.Args) >= 3 && os.Args[1] == "-e":
		lines = strings.Split(os.Args[2], ";")
	case len(os.Args) >= 2:
		data, err := os.ReadFile(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakeagent:", err)
			os.Exit(2)
		}
		lines = strings.Split(string(data), "\n")
	default:
		fmt.Fprintln(os.Stderr, "usage: fakeagent SCRIPT | fakeagent -e 'INSTR;INSTR'")
		os.Exit(2)
	}
	in := bufio.NewReader(os.Stdin)
	for _, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, arg, _ := strings.Cut(line, " ")
		switch op {
		case "print":
			os.Stdout.WriteString(unescape(arg))
		case "sleep":
			time.Sleep(mustDuration(arg))
		case "size":
			rows, cols := termSize()
			fmt.Printf("size: %d %d\r\n", rows, cols)
		case "readline":
			_, _ = in.ReadString('\n')
		case "pi-working":
			d, ver, _ := strings.Cut(arg, " ")
			piWorking(mustDuration(d), ver)
		case "pi-idle":
			piIdle(arg)
		case "exit":
			n, _ := strconv.Atoi(arg)
			os.Exit(n)
		case "exit-if":
			file, code, _ := strings.Cut(arg, " ")
			if _, err := os.Stat(file); err == nil {
				n, _ := strconv.Atoi(code)
				os.Exit(n)
			}
		case "kill":
			killSelf(arg)
		case "trap":
			ignoreSignal(arg)
		case "run":
			f := strings.Fields(arg)
			cmd := exec.Command(f[0], f[1:]...)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "fakeagent: %s: %v\n", arg, err)
				os.Exit(3)
			}
		case "raw":
			rawTerminal()
		case "readhex":
			fmt.Printf("hex: %x\r\n", readInput(in, arg))
		case "readsum":
			fmt.Printf("sum: %x\r\n", sha256.Sum256(readInput(in, arg)))
		case "flood":
			startFlood(unescape(arg))
		case "flood-stop":
			stopFlood()
		case "probe":
			probeConnect()
		case "event":
			name, data, _ := strings.Cut(arg, " ")
			probeEvent(name, data)
		default:
			fmt.Fprintf(os.Stderr, "fakeagent: unknown instruction %q\n", line)
			os.Exit(2)
		}
	}
}

// readInput reads exactly n (a decimal) bytes of input.
func readInput(in io.Reader, n string) []byte {
	size, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent:", err)
		os.Exit(2)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(in, b); err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent: read input:", err)
		os.Exit(3)
	}
	return b
}

var flood struct {
	stop chan struct{}
	done chan struct{}
}

// startFlood writes text over and over until stopFlood.
func startFlood(text string) {
	flood.stop, flood.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(flood.done)
		for {
			select {
			case <-flood.stop:
				return
			default:
			}
			os.Stdout.WriteString(text)
		}
	}()
}

func stopFlood() {
	if flood.stop != nil {
		close(flood.stop)
		<-flood.done
		flood.stop = nil
	}
}

func mustDuration(s string) time.Duration {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent:", err)
		os.Exit(2)
	}
	return d
}

func unescape(s string) string {
	r := strings.NewReplacer(`\e`, "\x1b", `\r`, "\r", `\n`, "\n", `\t`, "\t", `\\`, `\`)
	s = r.Replace(s)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// piWorking redraws Pi's busy indicator in place the way Pi does: 0.73 draws
// " ⠋ Working..." on its own row, 1.6 draws it inside the editor's top border.
func piWorking(d time.Duration, ver string) {
	rows, cols := termSize()
	// The time counts from the first frame written: a fake agent held up
	// before it (a loaded machine, a full terminal) would otherwise show
	// its busy row for less than d, or not at all, and a test that meant
	// d of work would blame the wrapper for missing it.
	var end time.Time
	for i := 0; i == 0 || time.Now().Before(end); i++ {
		frame := spinner[i%len(spinner)]
		var row string
		if ver == "0.73" {
			row = " " + frame + " Working..."
		} else {
			row = "── " + frame + " Working " + strings.Repeat("─", max(cols-14, 3))
		}
		fmt.Printf("\x1b[?2026h\x1b[%d;1H\x1b[2K%s\x1b[?2026l", rows-2, row)
		if i == 0 {
			end = time.Now().Add(d)
		}
		time.Sleep(80 * time.Millisecond)
	}
}

// piIdle draws Pi's idle editor: a plain border, an empty input line and the
// bottom border, over where the working row was.
func piIdle(ver string) {
	rows, cols := termSize()
	border := strings.Repeat("─", cols)
	fmt.Printf("\x1b[?2026h\x1b[%d;1H\x1b[2K%s\x1b[%d;1H\x1b[2K\x1b[%d;1H\x1b[2K%s\x1b[?2026l", rows-2, border, rows-1, rows, border)
	_ = ver
}

// probeConn is the fake agent's connection to its wrapper's control
// socket, speaking as the Pi probe does; it stays open until the process
// ends.
var probeConn net.Conn

// probeConnect dials the control socket named in the environment and says
// hello as the probe.
func probeConnect() {
	ep, ok := control.EndpointFromEnv(os.Getenv)
	if !ok {
		fmt.Fprintln(os.Stderr, "fakeagent: probe: no control socket in the environment")
		os.Exit(3)
	}
	c, err := net.Dial("unix", ep.Socket)
	if err == nil {
		var b []byte
		b, err = control.Encode(control.Message{Type: control.TypeHello, Token: ep.Token, Role: control.RoleProbe, PID: os.Getpid(), Version: control.ProtocolVersion})
		if err == nil {
			_, err = c.Write(b)
		}
		if err == nil {
			_, err = bufio.NewReader(c).ReadString('\n')
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent: probe:", err)
		os.Exit(3)
	}
	probeConn = c
}

// probeEvent sends one event (data is its JSON) on the probe connection.
func probeEvent(name, data string) {
	b, err := control.Encode(control.Message{Type: control.TypeEvent, Name: name, Data: json.RawMessage(data)})
	if err == nil && probeConn != nil {
		_, err = probeConn.Write(b)
	}
	if err != nil || probeConn == nil {
		fmt.Fprintln(os.Stderr, "fakeagent: event: no probe connection or", err)
		os.Exit(3)
	}
}
