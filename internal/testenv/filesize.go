package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fileSizeEnv makes a test binary, started by RunFileSizeLimited, run
// one test under a file size limit: "<limit>:<dir>".
const fileSizeEnv = "HERDR_PI_TEST_FILE_SIZE_LIMIT"

// FileSizeLimited is, in the child RunFileSizeLimited starts, the
// directory the test is to write into, with RLIMIT_FSIZE already lowered;
// "" in the test run itself. A write past the limit fails part way with
// EFBIG (the Go runtime ignores SIGXFSZ), as one on a full disk does: the
// file exists, holds part of its text, and the code must clean it up.
// A test of such a failure starts with
//
//	if dir := testenv.FileSizeLimited(t); dir != "" {
//		// the child: write into dir, t.Logf what came of it, return
//	}
//	out := testenv.RunFileSizeLimited(t, dir, limit) // the parent
//
// and must have no subtests (the child runs the test by its name).
func FileSizeLimited(t *testing.T) string {
	t.Helper()
	spec := os.Getenv(fileSizeEnv)
	if spec == "" {
		return ""
	}
	limitText, dir, _ := strings.Cut(spec, ":")
	limit, err := strconv.ParseUint(limitText, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", fileSizeEnv, spec, err)
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_FSIZE, &rl); err != nil {
		t.Fatal(err)
	}
	rl.Cur = limit
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &rl); err != nil {
		t.Fatal(err)
	}
	return dir
}

// RunFileSizeLimited runs the calling test again in a child process whose
// writes stop at limit bytes a file, writing into dir, and returns what it
// printed. The limit belongs to the whole process, so it is never set in
// the test run itself, where other tests write files.
func RunFileSizeLimited(t *testing.T, dir string, limit int) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.v")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%s", fileSizeEnv, limit, dir))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child under a %d-byte file size limit: %v\n%s", limit, err, out)
	}
	return string(out)
}
