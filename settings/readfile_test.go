package settings

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// mkfifo makes a real named pipe; nobody ever opens its write end, so a
// reader that opens it blocking would wait forever.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
}

func TestReadFileRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "config.toml")
	mkfifo(t, fifo)
	linkToFIFO := filepath.Join(dir, "link.toml")
	if err := os.Symlink(fifo, linkToFIFO); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, c := range []struct{ name, path, want string }{
		{"FIFO", fifo, "is a named pipe (FIFO)"},
		{"symlink to a FIFO", linkToFIFO, "is a named pipe (FIFO)"},
		{"/dev/zero", "/dev/zero", "is a device"},
		{"directory", dir, "is a directory"},
		{"socket", sock, "is a socket"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data, err := ReadFile(c.path, TOML)
			var fe *FileError
			if !errors.As(err, &fe) || !strings.Contains(fe.Reason, c.want) || data != nil {
				t.Fatalf("ReadFile(%s) = %d bytes, %v; want a FileError saying %q", c.path, len(data), err, c.want)
			}
			if !strings.Contains(fe.Reason, "regular file") || !strings.HasPrefix(err.Error(), c.path+": ") {
				t.Fatalf("the error should name the file and the way out: %v", err)
			}
			if errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%v must not read as a missing file (that one is silently fine)", err)
			}
		})
	}
}

func TestReadFileFollowsSymlinksToRegularFiles(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.toml")
	if err := os.WriteFile(real, []byte("a = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "config.toml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	data, err := ReadFile(link, TOML)
	if err != nil || string(data) != "a = 1\n" {
		t.Fatalf("ReadFile via symlink = %q, %v", data, err)
	}
	_, err = ReadFile(filepath.Join(dir, "missing.toml"), TOML)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestReadFileCapsSizeAndNesting(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	atCap := write("cap.toml", "# "+strings.Repeat("x", MaxFileBytes-3)+"\n")
	if data, err := ReadFile(atCap, TOML); err != nil || len(data) != MaxFileBytes {
		t.Fatalf("a file of exactly 1 MiB: %d bytes, %v", len(data), err)
	}
	cases := []struct {
		name, text string
		format     Format
		line       int
		want       string
	}{
		{"over 1 MiB", "# " + strings.Repeat("x", MaxFileBytes) + "\n", TOML, 0, "over the 1048576-byte (1 MiB) limit"},
		{"8000 nested inline tables", "[herdr]\nagent = " + strings.Repeat("{a = ", 8000) + "1" + strings.Repeat("}", 8000), TOML, 2, "nests deeper than 32 levels"},
		{"50000 nested arrays", "\n\n\na = " + strings.Repeat("[", 50000) + strings.Repeat("]", 50000), TOML, 4, "nests deeper than 32 levels"},
		{"deep dotted key", strings.Repeat("a.", 5000) + "b = 1", TOML, 1, "nests deeper than 32 levels"},
		{"deep header", "x = 1\n[" + strings.Repeat("a.", 20) + "b]", TOML, 2, "nests deeper than 32 levels"},
		{"deep JSON", "{\"a\":" + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "}", JSON, 1, "JSON nests deeper than 32 levels"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := write("f", c.text)
			data, err := ReadFile(p, c.format)
			var fe *FileError
			if !errors.As(err, &fe) || !strings.Contains(fe.Reason, c.want) || fe.Line != c.line || data != nil {
				t.Fatalf("ReadFile = %d bytes, %v (line %d); want line %d, %q", len(data), err, fe.Line, c.line, c.want)
			}
		})
	}
}

// The config and the notification config go through ReadFile: a FIFO,
// /dev/zero or a deep file is a config problem like any other, and the
// defaults stand in.
func TestLoadersReportFilesThatAreNotSettings(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	deep := filepath.Join(dir, "deep")
	if err := os.WriteFile(deep, []byte("[detect]\ndebounce = "+strings.Repeat("{a=", 50000)+"1"+strings.Repeat("}", 50000)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A file an editor saved as "Unicode": the TOML decoder would drop the
	// UTF-16 mark of one holding nothing else and call it valid.
	wide := map[string][]byte{"bom16": {0xff, 0xfe}, "text16": []byte("\xfe\xff\x00[\x00d"), "bom32": {0, 0, 0xfe, 0xff}}
	for name, data := range wide {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ path, want string }{
		{fifo, "shown: is a named pipe (FIFO), not a regular file"},
		{"/dev/zero", "shown: is a device, not a regular file"},
		{deep, "shown:2: TOML nests deeper than 32 levels"},
		{filepath.Join(dir, "bom16"), "shown: is UTF-16 (it starts with a UTF-16 byte-order mark); TOML files must be UTF-8: save it as UTF-8"},
		{filepath.Join(dir, "text16"), "shown: is UTF-16 "},
		{filepath.Join(dir, "bom32"), "shown: is UTF-32 "},
		// A file where the config's directory should be: "not a
		// directory" alone names neither that file nor the way out.
		{filepath.Join(deep, "herdr-pi", "config.toml"), "shown: cannot read: " + deep + " is a file, not a directory; move it away or rename it"},
	} {
		cfg, err := LoadConfig(c.path, "shown")
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), c.want) || cfg.Herdr != Defaults().Herdr {
			t.Errorf("LoadConfig(%s) = %v; want defaults and %q", c.path, err, c.want)
		}
		_, err = LoadTerminalNotifications(c.path, "shown")
		if !errors.As(err, &ce) || !strings.HasSuffix(err.Error(), "using the built-in terminal table") {
			t.Errorf("LoadTerminalNotifications(%s) = %v", c.path, err)
		}
	}
}

// A settings file herdr-pi may not read, or one in a directory it may not
// enter, says the way out with the reason, as every other refusal does:
// wrap, notify and detect print only the reason.
func TestReadFileSaysHowToFixPermissions(t *testing.T) {
	// Not t.TempDir: its parent is closed to others, and the file must be
	// reachable for its own mode to be what keeps it unread.
	dir, err := os.MkdirTemp("/tmp", "hprf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(file, []byte("[notify]\n"), 0o000); err != nil {
		t.Fatal(err)
	}
	closed := filepath.Join(dir, "closed")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(closed, "config.toml")
	if err := os.WriteFile(inside, []byte("[notify]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(closed, 0o000); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(closed, 0o700) }) // before RemoveAll: cleanups run last first
	var errs [2]error
	testenv.AsUnprivileged(t, file, func() {
		_, errs[0] = LoadConfig(file, "config.toml")
		_, errs[1] = LoadConfig(inside, "closed/config.toml")
	})
	for i, err := range errs {
		if want := []string{"cannot open", "cannot read"}[i]; !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("file %d: %v; want %q", i, err, want)
		}
		if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("file %d: %v", i, err)
		}
	}
	if want := "cannot open: permission denied; make " + file + " readable by the user running herdr-pi (chmod u+r " + file + ", or chown it)"; !strings.Contains(fmt.Sprint(errs[0]), want) {
		t.Errorf("the unreadable file: %v\nwant it to say %s", errs[0], want)
	}
	// A chmod of the file cannot help while its directory is shut: the
	// directory is named, with the chmod that opens it (as the store does).
	want := "cannot read: permission denied; the directory " + closed + " cannot be entered; make it searchable by the user running herdr-pi (chmod u+rx " + closed + ", or chown it)"
	if !strings.Contains(fmt.Sprint(errs[1]), want) {
		t.Errorf("the file in a shut directory: %v\nwant it to say %s", errs[1], want)
	}
}

// A symlink that leads nowhere, as the file or as a directory on the way
// to it, is a mistake named with its target, not a missing file: os.Stat
// follows links, and ENOENT alone made it read as "no config".
func TestReadFileNamesABrokenSymlink(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "config.toml")
	if err := os.Symlink("/nonexistent/config.toml", link); err != nil {
		t.Fatal(err)
	}
	linkDir := filepath.Join(dir, "herdr-pi")
	if err := os.Symlink("dotfiles/herdr-pi", linkDir); err != nil {
		t.Fatal(err)
	}
	goodDir := filepath.Join(dir, "good")
	if err := os.Symlink(t.TempDir(), goodDir); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, path, want string }{
		{"the file", link, link + ": is a symlink to /nonexistent/config.toml, which does not exist; point it at an existing file, or remove it"},
		{"its directory", filepath.Join(linkDir, "config.toml"),
			filepath.Join(linkDir, "config.toml") + ": cannot read: " + linkDir + " is a symlink to dotfiles/herdr-pi, which does not exist; point it at an existing directory, or remove it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadFile(c.path, TOML)
			if err == nil || err.Error() != c.want {
				t.Fatalf("got  %v\nwant %s", err, c.want)
			}
			if errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrBrokenLink) {
				t.Fatalf("%v must match ErrBrokenLink, not fs.ErrNotExist", err)
			}
			if _, err := LoadConfig(c.path, "config.toml"); err == nil {
				t.Fatal("LoadConfig took a broken link for no config")
			}
		})
	}
	// A link that leads somewhere leaves a missing file simply missing.
	if _, err := ReadFile(filepath.Join(goodDir, "config.toml"), TOML); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file behind a good link: %v, want fs.ErrNotExist", err)
	}
}

// /dev/null, named directly or through a symlink, reads as an empty file:
// HERDR_PI_CONFIG=/dev/null is the usual way to say "no config", and a
// config that is empty means all defaults, without a warning.
func TestReadFileReadsTheNullDeviceAsEmpty(t *testing.T) {
	link := filepath.Join(t.TempDir(), "config.toml")
	if err := os.Symlink(os.DevNull, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{os.DevNull, link} {
		data, err := ReadFile(path, TOML)
		if err != nil || len(data) != 0 {
			t.Errorf("ReadFile(%s) = %q, %v; want nothing, no error", path, data, err)
		}
		if cfg, err := LoadConfig(path, path); err != nil || cfg.Herdr != Defaults().Herdr {
			t.Errorf("LoadConfig(%s) = %v; want the defaults, no error", path, err)
		}
		if !IsNullDevice(path) {
			t.Errorf("IsNullDevice(%s) = false", path)
		}
	}
	if IsNullDevice("/dev/zero") {
		t.Error("IsNullDevice(/dev/zero) = true")
	}
}

// A device where a directory should be (PI_CODING_AGENT_DIR=/dev/null) is
// named as what it is, and never with "move it away or rename it": that
// advice is for a stray file, and renaming /dev/null breaks the machine.
func TestReadFileNamesADeviceWhereADirectoryShouldBe(t *testing.T) {
	_, err := ReadFile("/dev/null/pi-extensible-workflows/settings.json", JSON)
	want := "/dev/null/pi-extensible-workflows/settings.json: cannot read: /dev/null is a device, not a directory"
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	// Named itself, a device is not to be replaced or removed either.
	_, err = ReadFile("/dev/zero", TOML)
	if err == nil || strings.Contains(err.Error(), "remove it") || strings.Contains(err.Error(), "put a file") {
		t.Fatalf("/dev/zero: %v", err)
	}
}

// A symlink loop says what it is and what to do, not only the errno.
func TestReadFileNamesASymlinkLoop(t *testing.T) {
	dir := t.TempDir()
	loop := filepath.Join(dir, "config.toml")
	if err := os.Symlink("config.toml", loop); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{loop, filepath.Join(loop, "x.toml")} {
		_, err := ReadFile(path, TOML)
		want := path + ": cannot read: too many levels of symbolic links; a symlink on the way leads back to itself: see where each link there leads with `ls -l`, then point the loop's link at a real directory or file, or remove it"
		if err == nil || err.Error() != want {
			t.Errorf("got  %v\nwant %s", err, want)
		}
	}
}

// A settings file kept elsewhere and linked in (dotfiles), where a
// directory on the way to the link's target is shut: a chmod of the link
// changes the target, which the shut directory keeps out of reach, so the
// way out names that directory, found through the link (as the file
// itself, or as a directory on the way to it).
func TestReadFileNamesTheShutDirectoryBehindASymlink(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "hprl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	closed := filepath.Join(dir, "dotfiles")
	if err := os.MkdirAll(filepath.Join(closed, "herdr-pi"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(closed, "herdr-pi", "config.toml"), []byte("[notify]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fileLink := filepath.Join(dir, "config.toml")
	if err := os.Symlink("dotfiles/herdr-pi/config.toml", fileLink); err != nil {
		t.Fatal(err)
	}
	dirLink := filepath.Join(dir, "herdr-pi")
	if err := os.Symlink(filepath.Join(closed, "herdr-pi"), dirLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(closed, 0o000); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(closed, 0o700) }) // before RemoveAll: cleanups run last first
	var errs [2]error
	testenv.AsUnprivileged(t, fileLink, func() {
		_, errs[0] = LoadConfig(fileLink, "config.toml")
		_, errs[1] = LoadConfig(filepath.Join(dirLink, "config.toml"), "herdr-pi/config.toml")
	})
	want := "the directory " + closed + " cannot be entered; make it searchable by the user running herdr-pi (chmod u+rx " + closed + ", or chown it)"
	for i, err := range errs {
		if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant it to say %s", []string{"the file linked", "its directory linked"}[i], err, want)
		}
	}
}
