package doctor

import "testing"

func TestForPeopleShortensHomeWhereAPersonTypesIt(t *testing.T) {
	const home = "/home/ann"
	for _, tc := range []struct{ in, want string }{
		{"/home/ann/.local/state/herdr-pi does not exist yet", "~/.local/state/herdr-pi does not exist yet"},
		{"herdr-pi logs to /home/ann/.local/state/herdr-pi/herdr-pi.log (its directory", "herdr-pi logs to ~/.local/state/herdr-pi/herdr-pi.log (its directory"},
		{"remove /home/ann/x; the next", "remove ~/x; the next"},
		{"the home /home/ann.", "the home ~."},
		{"(/home/ann/run)", "(~/run)"},
		// Quoted for pasting: a shell expands no ~ in quotes.
		{"chmod 700 '/home/ann/my dir/herdr-pi'", "chmod 700 '/home/ann/my dir/herdr-pi'"},
		// A variable's value is said as it is.
		{"XDG_STATE_HOME=/home/ann/s names that file", "XDG_STATE_HOME=/home/ann/s names that file"},
		// Another home that only starts alike, and a path that holds home
		// further in, are other paths.
		{"/home/anna/x and /srv/home/ann/x", "/home/anna/x and /srv/home/ann/x"},
		{"/home/ann.bak/x", "/home/ann.bak/x"},
	} {
		got := ForPeople([]Row{{Detail: tc.in, Fix: tc.in}}, home)[0]
		if got.Detail != tc.want || got.Fix != tc.want {
			t.Errorf("%q: got %q / %q, want %q", tc.in, got.Detail, got.Fix, tc.want)
		}
	}
	rows := []Row{{Detail: "/x/y"}}
	for _, h := range []string{"", "/", "relative"} {
		if got := ForPeople(rows, h)[0].Detail; got != "/x/y" {
			t.Errorf("home %q: %q", h, got)
		}
	}
}
