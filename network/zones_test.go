package network

import (
	"encoding/csv"
	"go/build"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestRegions(t *testing.T) {
	want := []string{"N_Virginia", "Canada", "N_California", "London", "Oregon", "Ireland", "Frankfurt",
		"S_Paulo", "Tokyo", "Mumbai", "Sydney", "Seoul", "Singapore"}
	got := Regions()
	if len(got) != len(want) {
		t.Fatalf("Regions() = %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Regions()[%d] = %s, want %s", i, got[i], want[i])
		}
	}
	got[0] = "mutated"
	if Regions()[0] != "N_Virginia" {
		t.Fatal("Regions returns the package's slice")
	}
}

func TestZoneLatency(t *testing.T) {
	for _, c := range []struct {
		from, to string
		ms       int
	}{
		{"N_Virginia", "Tokyo", 73},
		{"Tokyo", "N_Virginia", 73},
		{"Seoul", "Tokyo", 17}, // the matrix is directed
		{"Tokyo", "Seoul", 16},
		{"us-east-1", "ap-northeast-1", 73},
		{"eu-west-2", "eu-west-1", 5}, // London -> Ireland
		{"london", "FRANKFURT", 8},
		{"S_Paulo", "Singapore", 161},
		{"Oregon", "us-west-2", 0},
	} {
		got, ok := ZoneLatency(c.from, c.to)
		if !ok || got != time.Duration(c.ms)*time.Millisecond {
			t.Errorf("ZoneLatency(%s, %s) = %v, %v; want %dms", c.from, c.to, got, ok, c.ms)
		}
	}
	if _, ok := ZoneLatency("Mars", "Tokyo"); ok {
		t.Error("unknown region accepted")
	}
	codes := []string{"us-east-1", "ca-central-1", "us-west-1", "eu-west-2", "us-west-2", "eu-west-1",
		"eu-central-1", "sa-east-1", "ap-northeast-1", "ap-south-1", "ap-southeast-2", "ap-northeast-2", "ap-southeast-1"}
	for i, code := range codes {
		if r, ok := CanonicalRegion(code); !ok || r != Regions()[i] {
			t.Errorf("CanonicalRegion(%s) = %s, %v; want %s", code, r, ok, Regions()[i])
		}
	}
}

// The copied matrix must match CometBFT's CSV, when the module is at hand.
func TestZoneMatrixMatchesCometBFT(t *testing.T) {
	path := filepath.Join(build.Default.GOPATH, "pkg", "mod", "github.com", "cometbft",
		"cometbft@v1.0.1", "test", "e2e", "pkg", "files", "aws-latencies.csv")
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("CometBFT's matrix not in the module cache: %v", err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range rows[1:] {
		if row[0] != regions[i] || rows[0][i+1] != regions[i] {
			t.Fatalf("region %d: CSV has %s/%s, we have %s", i, row[0], rows[0][i+1], regions[i])
		}
		for j, cell := range row[1:] {
			v, _ := strconv.Atoi(cell)
			if zoneMatrix[i][j] != v {
				t.Errorf("%s -> %s: CSV %d, ours %d", regions[i], regions[j], v, zoneMatrix[i][j])
			}
		}
	}
}

func TestZoneDelay(t *testing.T) {
	d, err := ZoneDelay("N_Virginia", "Tokyo", 1, "v1->v2")
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	var sum, sq float64
	for range n {
		x := float64(d.Draw()) / float64(time.Millisecond)
		sum += x
		sq += x * x
	}
	mean := sum / n
	sd := math.Sqrt(sq/n - mean*mean)
	if math.Abs(mean-73) > 0.2 || math.Abs(sd-3.65) > 0.2 {
		t.Fatalf("N_Virginia -> Tokyo draws mean %.2fms sd %.2fms, want 73 and 3.65", mean, sd)
	}
	same, _ := ZoneDelay("Tokyo", "ap-northeast-1", 1, "x")
	if same.Draw() != 0 {
		t.Fatal("same region should be 0")
	}
	if _, err := ZoneDelay("Tokyo", "Atlantis", 1, "x"); err == nil {
		t.Fatal("unknown region: want error")
	}
	a, _ := ZoneDelay("Tokyo", "Seoul", 1, "a")
	b, _ := ZoneDelay("Tokyo", "Seoul", 1, "a")
	for range 10 {
		if a.Draw() != b.Draw() {
			t.Fatal("same seed and stream drew differently")
		}
	}
}
