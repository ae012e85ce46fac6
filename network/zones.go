package network

import (
	"fmt"
	"strings"
	"time"

	"github.com/valnet/valnet/latency"
)

// regions and zoneMatrix are CometBFT's e2e latency matrix, copied from
// cometbft v1.0.1 test/e2e/pkg/files/aws-latencies.csv: one-way latencies
// in ms between 13 AWS regions, row = from, column = to. The matrix is not
// quite symmetric (e.g. Seoul->Tokyo 17, Tokyo->Seoul 16); it is kept
// directed as CometBFT applies it. Same region is 0.
var regions = []string{
	"N_Virginia", "Canada", "N_California", "London", "Oregon", "Ireland", "Frankfurt",
	"S_Paulo", "Tokyo", "Mumbai", "Sydney", "Seoul", "Singapore",
}

var zoneMatrix = [13][13]int{
	{0, 7, 30, 38, 39, 33, 44, 58, 73, 93, 98, 87, 105},       // N_Virginia
	{7, 0, 38, 39, 29, 35, 46, 63, 70, 94, 97, 85, 103},       // Canada
	{30, 39, 0, 68, 10, 68, 75, 88, 54, 116, 69, 67, 86},      // N_California
	{38, 39, 68, 0, 63, 5, 8, 94, 104, 56, 131, 118, 82},      // London
	{39, 29, 10, 63, 0, 59, 68, 88, 49, 109, 69, 63, 84},      // Oregon
	{33, 35, 68, 5, 59, 0, 13, 88, 100, 61, 127, 114, 90},     // Ireland
	{44, 46, 75, 8, 68, 13, 0, 101, 111, 60, 143, 109, 77},    // Frankfurt
	{58, 63, 88, 94, 88, 89, 101, 0, 128, 151, 155, 142, 161}, // S_Paulo
	{73, 70, 54, 104, 49, 100, 111, 128, 0, 60, 57, 16, 39},   // Tokyo
	{93, 94, 116, 56, 109, 61, 60, 151, 60, 0, 76, 57, 27},    // Mumbai
	{98, 97, 69, 131, 69, 127, 143, 155, 57, 76, 0, 69, 45},   // Sydney
	{87, 84, 67, 118, 63, 114, 109, 142, 17, 57, 69, 0, 36},   // Seoul
	{105, 103, 86, 82, 81, 90, 77, 161, 39, 27, 45, 36, 0},    // Singapore
}

// regionAliases maps AWS region codes to the CSV's names.
var regionAliases = map[string]string{
	"us-east-1":      "N_Virginia",
	"ca-central-1":   "Canada",
	"us-west-1":      "N_California",
	"eu-west-2":      "London",
	"us-west-2":      "Oregon",
	"eu-west-1":      "Ireland",
	"eu-central-1":   "Frankfurt",
	"sa-east-1":      "S_Paulo",
	"ap-northeast-1": "Tokyo",
	"ap-south-1":     "Mumbai",
	"ap-southeast-2": "Sydney",
	"ap-northeast-2": "Seoul",
	"ap-southeast-1": "Singapore",
}

// ZoneJitter is the relative jitter CometBFT's latency-setter.py gives
// each delay (netem "delay L 0.05*L distribution normal").
const ZoneJitter = 0.05

// Regions returns the matrix's region names, in the CSV's order.
func Regions() []string { return append([]string(nil), regions...) }

// CanonicalRegion resolves a region name (case-insensitive) or AWS region
// code to the matrix's name.
func CanonicalRegion(name string) (string, bool) {
	if r, ok := regionAliases[strings.ToLower(name)]; ok {
		return r, true
	}
	for _, r := range regions {
		if strings.EqualFold(r, name) {
			return r, true
		}
	}
	return "", false
}

func regionIndex(name string) (int, bool) {
	c, ok := CanonicalRegion(name)
	if !ok {
		return 0, false
	}
	for i, r := range regions {
		if r == c {
			return i, true
		}
	}
	return 0, false
}

// ZoneLatency returns the mean one-way latency from one region to another.
func ZoneLatency(from, to string) (mean time.Duration, ok bool) {
	i, ok1 := regionIndex(from)
	j, ok2 := regionIndex(to)
	if !ok1 || !ok2 {
		return 0, false
	}
	return time.Duration(zoneMatrix[i][j]) * time.Millisecond, true
}

// ZoneDelay is the delay CometBFT's e2e setup applies from one region to
// another: the matrix's mean with 5% normal jitter (none within a region).
// Draws are seeded by (seed, stream); give each link its own stream (e.g.
// "v1->v2") so links between the same regions do not jitter in lockstep.
func ZoneDelay(from, to string, seed int64, stream string) (latency.Model, error) {
	mean, ok := ZoneLatency(from, to)
	if !ok {
		return nil, fmt.Errorf("network: unknown region in %q -> %q (known: %s, or AWS region codes)",
			from, to, strings.Join(regions, ", "))
	}
	if mean == 0 {
		return latency.Constant(0), nil
	}
	return latency.New(latency.Spec{Dist: latency.Normal, Mean: mean, Stddev: time.Duration(ZoneJitter * float64(mean))}, seed, stream)
}
