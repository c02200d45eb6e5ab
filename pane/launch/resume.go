package launch

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/internal/lazyre"
	"github.com/herdr-pi/herdr-pi/internal/termtext"
)

// Resume is what Pi prints when an interactive session ends with a session
// on disk (Pi 1.6.0): the line "To resume this session:" and under it the
// command, `pi [--session-dir <dir>] --session <id>`, the directory quoted
// for a POSIX shell when it needs it.
type Resume struct {
	Program string   // the command's first word, as printed ("pi")
	Args    []string // the words after it, unquoted
}

const resumeLabel = "To resume this session:"

// ResumeHint finds Pi's resume hint at the very end of output, the last
// bytes Pi wrote to its terminal. It must be the last thing there (escape
// sequences and blank lines aside): words that merely mention it earlier,
// say in a reply, never match.
func ResumeHint(output []byte) (Resume, bool) {
	lines := plainLines(output)
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) < 2 || strings.TrimSpace(lines[len(lines)-2]) != resumeLabel {
		return Resume{}, false
	}
	words, ok := shellWords(strings.TrimSpace(lines[len(lines)-1]))
	if !ok || len(words) < 3 || !safeWord().MatchString(words[0]) || strings.HasPrefix(words[0], "-") {
		return Resume{}, false
	}
	rest := words[1:]
	if rest[0] == "--session-dir" {
		if len(rest) < 2 || rest[1] == "" || !showable(rest[1]) {
			return Resume{}, false
		}
		rest = rest[2:]
	}
	// A session id is a UUID, or what --session-id set; Pi prints it
	// unquoted, so anything a shell would need quoted is not a hint.
	if len(rest) != 2 || rest[0] != "--session" || !safeWord().MatchString(rest[1]) {
		return Resume{}, false
	}
	return Resume{Program: words[0], Args: words[1:]}, true
}

// ResumeCommand is the command line that resumes Pi's session under
// herdr-pi: prefix (herdr-pi wrap and its flags), then the part of this
// command that starts Pi (Pi's own program name when the command is
// Opaque; after "--" when it starts with a dash), then Pi's resume
// arguments. Pi's other arguments are left out,
// as Pi's own hint leaves them out. Words are quoted for a POSIX shell
// when they need it; ok is false when a word holds characters that have no
// place on a command line shown in a terminal (control or invisible ones,
// or a backslash, which fish would misread).
func (c Command) ResumeCommand(prefix []string, r Resume) (string, bool) {
	launch := c.Launch
	if c.Shape == Opaque {
		launch = []string{r.Program}
	}
	if strings.HasPrefix(launch[0], "-") {
		prefix = append(slices.Clip(prefix), "--")
	}
	words := slices.Concat(prefix, launch, r.Args)
	out := make([]string, len(words))
	for i, w := range words {
		if !showable(w) {
			return "", false
		}
		out[i] = quote(w)
	}
	return strings.Join(out, " "), true
}

// safeWord is what needs no quoting (the set Pi's own quoting leaves bare).
var safeWord = lazyre.New(`^[a-zA-Z0-9_\-./~:@]+$`)

func safeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_-./~:@", c) >= 0
}

func quote(w string) string {
	if safeWord().MatchString(w) {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// shellWords splits a line of words separated by single spaces, each made
// of bare safe characters, '…' runs and \' (the only forms Pi's quoting
// produces). Anything else is not Pi's hint.
func shellWords(line string) ([]string, bool) {
	var words []string
	var w strings.Builder
	started := false
	for i := 0; i < len(line); {
		switch c := line[i]; {
		case c == ' ':
			if !started {
				return nil, false
			}
			words = append(words, w.String())
			w.Reset()
			started = false
			i++
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, false
			}
			w.WriteString(line[i+1 : i+1+end])
			started = true
			i += end + 2
		case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
			w.WriteByte('\'')
			started = true
			i += 2
		case safeByte(c):
			w.WriteByte(c)
			started = true
			i++
		default:
			return nil, false
		}
	}
	if !started {
		return nil, false
	}
	return append(words, w.String()), true
}

// showable is a word fit for the command line shown: printable, and with
// no backslash. The words are quoted as Pi quotes them, in single quotes,
// inside which fish reads \' as an escaped quote, so a word ending in a
// backslash would run what follows it when the line is pasted into fish.
func showable(w string) bool { return printable(w) && !strings.ContainsRune(w, '\\') }

// printable: valid UTF-8 with nothing termtext finds harmful (controls,
// bidi controls) and none of the invisible characters that can disguise
// text (zero-width, soft hyphen, BOM).
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case termtext.Harmful(r):
			return false
		case (r >= 0x200b && r <= 0x206f) || r == 0xad || r == 0xfeff:
			return false
		}
	}
	return true
}

// plainLines turns terminal output into the lines of text it leaves, as
// far as the end of a session needs: characters overwrite at the cursor,
// CR and CSI G move it within the line, CSI K erases (a package runner's
// spinner draws and erases itself after the agent exits), LF starts a new
// line. Other escape sequences (SGR, OSC, cursor moves up and down) and
// control characters are dropped.
func plainLines(b []byte) []string {
	lines := [][]rune{nil}
	col := 0
	put := func(r rune) {
		l := lines[len(lines)-1]
		for len(l) < col {
			l = append(l, ' ')
		}
		if col < len(l) {
			l[col] = r
		} else {
			l = append(l, r)
		}
		lines[len(lines)-1] = l
		col++
	}
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == 0x1b:
			end := skipEscape(b, i)
			if end >= i+2 && b[i+1] == '[' && b[end] >= 0x40 && b[end] <= 0x7e {
				col = csiLine(b[i+2:end], b[end], col, &lines[len(lines)-1])
			}
			i = end + 1
		case c == '\n':
			if len(lines) == keptLines {
				lines = lines[1:]
			}
			lines = append(lines, nil)
			col = 0
			i++
		case c == '\r':
			col = 0
			i++
		case c == '\b':
			col = max(0, col-1)
			i++
		case c < 0x20 || c == 0x7f:
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			put(r)
			i += n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l)
	}
	return out
}

// keptLines and maxColumn bound what plainLines keeps: the end of a
// session is a few lines of ordinary width.
const (
	keptLines = 16
	maxColumn = 1024
)

// csiLine applies the CSI sequences that change the current line: G
// (cursor to column) and K (erase in line). It returns the new column.
func csiLine(params []byte, final byte, col int, line *[]rune) int {
	n := 0
	for _, p := range params {
		if p < '0' || p > '9' {
			if final == 'G' {
				return col // not a plain "CSI n G"
			}
			n = -1
			break
		}
		n = min(n*10+int(p-'0'), maxColumn)
	}
	switch final {
	case 'G':
		return max(n, 1) - 1
	case 'K':
		l := *line
		switch n {
		case 0:
			if col < len(l) {
				*line = l[:col]
			}
		case 1:
			for i := 0; i <= col && i < len(l); i++ {
				l[i] = ' '
			}
		case 2:
			*line = nil
		}
	}
	return col
}

// skipEscape returns the index of the last byte of the escape sequence
// that starts at b[i] (ESC). An unfinished sequence runs to the end.
func skipEscape(b []byte, i int) int {
	if i+1 >= len(b) {
		return i
	}
	switch b[i+1] {
	case '[': // CSI: parameters and intermediates, then a final byte
		for j := i + 2; j < len(b); j++ {
			if b[j] >= 0x40 && b[j] <= 0x7e {
				return j
			}
		}
		return len(b) - 1
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC: until BEL or ST
		for j := i + 2; j < len(b); j++ {
			if b[j] == 0x07 && b[i+1] == ']' {
				return j
			}
			if b[j] == 0x1b && j+1 < len(b) && b[j+1] == '\\' {
				return j + 1
			}
		}
		return len(b) - 1
	}
	// ESC, intermediates (0x20–0x2f), final byte: ESC 7, ESC ( B, …
	j := i + 1
	for j < len(b) && b[j] >= 0x20 && b[j] <= 0x2f {
		j++
	}
	return min(j, len(b)-1)
}
