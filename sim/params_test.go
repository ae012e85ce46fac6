package sim

import (
	"regexp"
	"strings"
	"testing"
)

func TestParseParams(t *testing.T) {
	good := mustDefaultText(t)
	if _, err := ParseParams("default", []byte(good)); err != nil {
		t.Fatalf("the shipped calibration: %v", err)
	}
	for _, tc := range []struct {
		name, edit, want string
	}{
		{"unknown key", good + "colour: red\n", "field colour not found"},
		{"missing figure", strings.Replace(good, "commit_cost: ", "# commit_cost: ", 1), "missing commit_cost"},
		{"negative", strings.Replace(good, "vote_cost: ", "vote_cost: -", 1), "vote_cost: must be >= 0"},
		{"no sleep", regexp.MustCompile(`(?m)^gossip_sleep: .*$`).ReplaceAllString(good, "gossip_sleep: 0s"), "gossip_sleep: must be > 0"},
	} {
		_, err := ParseParams("cal.yaml", []byte(tc.edit))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "cal.yaml: ") {
			t.Errorf("%s: %v, want an error naming the file and %q", tc.name, err, tc.want)
		}
	}
}

// TestMarshalRoundTrip: what calibrate writes reads back the same.
func TestMarshalRoundTrip(t *testing.T) {
	p, err := LoadParams("")
	if err != nil {
		t.Fatal(err)
	}
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	q, err := ParseParams("written", data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if p != q {
		t.Errorf("round trip changed the calibration:\n%+v\n%+v", p, q)
	}
}

func mustDefaultText(t *testing.T) string {
	data, err := calibrations.ReadFile("calibration/default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
