package buildinfo

import "testing"

// The release make build stamps is the version both --version and the
// control socket's hellos name; the commit comes from the build's record.
func TestTheStampedReleaseIsTheVersion(t *testing.T) {
	Release = "v9.9.9"
	in := Read()
	if in.Version != "v9.9.9" {
		t.Fatalf("version %q, want the stamped release v9.9.9", in.Version)
	}
	if len(in.Revision) > 12 {
		t.Fatalf("revision %q is not cut to 12 characters", in.Revision)
	}
}
