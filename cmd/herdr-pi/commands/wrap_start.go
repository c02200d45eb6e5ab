package commands

import (
	"bytes"
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/doctor"
	"github.com/herdr-pi/herdr-pi/pane/pty"
	"github.com/herdr-pi/herdr-pi/settings"
)

// explainStart completes a start failure that says "no such file or
// directory" about a program that is there. The kernel answers ENOENT too
// when what is missing is the program that runs it: the interpreter a
// script's #! line names, or a binary's dynamic loader (one built for
// another system). That one is named, so the person knows what to install
// or fix; so is the way to install Pi when it is Pi that is missing. Any
// other failure is returned as it is.
func explainStart(err error, argv0 string, env []string, cwd string) error {
	var se *pty.StartError
	if errors.As(err, &se) && argv0 == "pi" && errors.Is(se, exec.ErrNotFound) {
		// Pi itself missing is what a new user meets first: how to get it,
		// as doctor says, rather than "install it".
		c := *se
		c.Reason = fmt.Sprintf("command not found in PATH=%s; %s", cmp.Or(settings.EnvFrom(env).Get("PATH"), "(empty)"), doctor.InstallPi)
		return &c
	}
	if !errors.As(err, &se) || !errors.Is(se, fs.ErrNotExist) {
		return err
	}
	path := argv0
	switch {
	case !strings.Contains(argv0, "/"):
		p, ok := pty.LookPath(argv0, settings.EnvFrom(env).Get("PATH"))
		if !ok {
			return err
		}
		path = p
	case !filepath.IsAbs(argv0):
		path = filepath.Join(cwd, argv0)
	}
	if fi, statErr := os.Stat(path); statErr != nil || !fi.Mode().IsRegular() {
		return err // the program itself is missing: the error says so already
	}
	kind, interp := interpreterOf(path)
	if interp == "" {
		return err
	}
	shown := interp
	if !filepath.IsAbs(interp) {
		interp = filepath.Join(cwd, interp) // the kernel reads it from the new process's directory
	}
	if _, statErr := os.Stat(interp); statErr == nil {
		return err // it is there: something else is missing
	}
	c := *se
	switch kind {
	case "script":
		c.Reason = fmt.Sprintf("its #! line names the interpreter %s, which does not exist: install it, or change the script's first line", shown)
	default:
		c.Reason = fmt.Sprintf("its dynamic loader %s does not exist: the program was built for another system, or the package with that loader is missing", shown)
	}
	return &c
}

// interpreterOf reads what runs the program at path: the interpreter of
// a #! line (its first word, as the kernel reads it), or an ELF binary's
// PT_INTERP loader. kind is "script" or "binary"; interp is "" for
// neither.
func interpreterOf(path string) (kind, interp string) {
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	head := make([]byte, 256) // Linux reads at most this much of a #! line
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if line, ok := bytes.CutPrefix(head, []byte("#!")); ok {
		line, _, _ = bytes.Cut(line, []byte("\n"))
		if fields := strings.Fields(string(line)); len(fields) > 0 {
			return "script", fields[0]
		}
		return "", ""
	}
	if !bytes.HasPrefix(head, []byte(elf.ELFMAG)) {
		return "", ""
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return "", ""
	}
	defer ef.Close()
	for _, p := range ef.Progs {
		if p.Type != elf.PT_INTERP || p.Filesz > 4096 {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err == nil {
			return "binary", string(bytes.TrimRight(b, "\x00"))
		}
	}
	return "", ""
}
