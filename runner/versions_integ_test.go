//go:build integ

package runner

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/cmtversion"
	"github.com/valnet/valnet/internal/nettest"
	"github.com/valnet/valnet/internal/testbin"
	"github.com/valnet/valnet/results"
)

// Every CometBFT line valnet supports, as the stock binary of its tested
// release (built from the Go module proxy), on the process backend: four
// validators, one of them behind a 1.5 s signer, vote extensions on where
// the line has them. valnet reads the binary's version, writes the home
// that version reads and answers its signer in its privval dialect; its
// missed precommits and commit rounds must be what each node's own
// /commit says, height by height.
func TestIntegUserBinaryVersions(t *testing.T) {
	// Parallel: its checks are load-proof (heights, signatures, /commit
	// agreement, lower bounds), so it runs beside the other parallel
	// tests of make integ after the sequential ones (the host-judged
	// timing tests and the leak searches) have had the host alone.
	t.Parallel()
	type tc struct {
		backend string
		line    cmtversion.Line
	}
	// VALNET_INTEG_LINES selects lines (make integ: CI's sample; make
	// versions: every line).
	var cases []tc
	for _, name := range nettest.Selected(t, "VALNET_INTEG_LINES", cmtversion.Names()) {
		l, _ := cmtversion.Lookup(name)
		cases = append(cases, tc{"process", l})
	}
	// The docker backend builds an image of the stock binary (its shared
	// libraries with it) and reads its events over RPC as the process
	// backend does: one line is enough to show it.
	l38, _ := cmtversion.Lookup("v0.38")
	cases = append(cases, tc{"docker", l38})
	for _, c := range cases {
		l := c.line
		t.Run(c.backend+"/"+l.Tested, func(t *testing.T) {
			bin := testbin.CometBFT(t, l.Tested)
			ext := 0
			if l.VoteExtensions {
				ext = 1
			}
			y := fmt.Sprintf(`
name: versions
chain: {vote_extensions_enable_height: %d}
run: {backend: %s, heights: 10, max_duration: 4m}
node: {binary: %q}
validators:
  - {name: v, count: 3}
  - name: slow
    signer: {latency: 1500ms}
expect:
  - {metric: heights_committed, min: 10}
  - {metric: double_signs, max: 0}
`, ext, c.backend, bin)
			dir := filepath.Join(t.TempDir(), "run")
			showLogsOnFailure(t, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			var commits map[string][]stockCommit // by node: /commit of heights 1..
			var checkErr error
			out, err := Run(ctx, parse(t, y), Options{OutDir: dir, Keep: true, OnKeep: func(o *Outcome, info NetworkInfo) {
				defer cancel()
				commits, checkErr = readCommits(info, o.Summary.Heights.Committed)
			}})
			if err != nil {
				t.Fatal(err)
			}
			s := out.Summary
			if !s.OK {
				t.Fatalf("%s: %+v", results.ResultLine(s), s.Failed())
			}
			if checkErr != nil {
				t.Fatal(checkErr)
			}
			names := map[string]string{}
			for _, v := range s.Validators {
				names[v.Address] = v.Name
			}
			rows := readHeightsCSV(t, filepath.Join(dir, HeightsFile))
			missed := 0
			for node, cs := range commits {
				for _, c := range cs {
					row, ok := rows[c.height]
					if !ok {
						continue // not yet in a next block's LastCommit when the run ended
					}
					var absent []string
					for _, sig := range c.absent {
						absent = append(absent, names[sig])
					}
					slices.Sort(absent)
					if row.round != c.round || strings.Join(row.absent, ",") != strings.Join(absent, ",") {
						t.Errorf("height %d: valnet says round %d, absent %v; %s's /commit says round %d, absent %v",
							c.height, row.round, row.absent, node, c.round, absent)
					}
					if node == "v-1" && slices.Contains(absent, "slow") {
						missed++
					}
				}
			}
			slow := 0
			for _, v := range s.Validators {
				if v.Name == "slow" {
					slow = v.MissedPrecommits
				}
			}
			f := s.Validators[0].Node
			t.Logf("%s (%s): started, %d heights, slow missed %d/%d (/commit of v-1: %d), round changes %d, sign errors %d; %s",
				l.Tested, f, s.Heights.Committed, slow, s.Validators[0].PrecommitsCounted, missed, s.Rounds.HeightsWithRoundChange,
				totalSignErrors(s), results.ResultLine(s))
			if slow == 0 {
				t.Errorf("the 1.5 s signer missed no precommit: the version's timeouts are not what the run used")
			}
		})
	}
}

func totalSignErrors(s *results.Summary) int {
	n := 0
	for _, v := range s.Validators {
		n += v.SignErrors
	}
	return n
}

type stockCommit struct {
	height int64
	round  int32
	absent []string // validator addresses (upper-case hex) with BlockIDFlagAbsent
}

type heightRow struct {
	round  int32
	absent []string
}

func readHeightsCSV(t *testing.T, path string) map[int64]heightRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	out := map[int64]heightRow{}
	for _, r := range recs[1:] {
		h, _ := strconv.ParseInt(r[col["height"]], 10, 64)
		round, _ := strconv.ParseInt(r[col["commit_round"]], 10, 32)
		var absent []string
		if a := r[col["absent"]]; a != "" {
			absent = strings.Split(a, " ")
		}
		slices.Sort(absent)
		if r[col["commit_round"]] == "" {
			continue // its LastCommit is not known
		}
		out[h] = heightRow{round: int32(round), absent: absent}
	}
	return out
}

// readCommits asks every node of info for /commit of heights 1..upTo-1
// (each is then canonical: block h+1's LastCommit).
func readCommits(info NetworkInfo, upTo int) (map[string][]stockCommit, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	out := map[string][]stockCommit{}
	for _, n := range info.Validators {
		// An absent CommitSig carries no address: its place in the
		// signatures is its place in the validator set.
		var vals struct {
			Result struct {
				Validators []struct {
					Address string `json:"address"`
				} `json:"validators"`
			} `json:"result"`
		}
		r, err := client.Get(strings.TrimSuffix(n.RPC, "/") + "/validators?height=1")
		if err != nil {
			return nil, fmt.Errorf("%s /validators: %w", n.Name, err)
		}
		err = json.NewDecoder(r.Body).Decode(&vals)
		r.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("%s /validators: %w", n.Name, err)
		}
		// A node's canonical commits are of the heights below its own
		// latest block (a lagging node has fewer).
		var status struct {
			Result struct {
				SyncInfo struct {
					Latest string `json:"latest_block_height"`
				} `json:"sync_info"`
			} `json:"result"`
		}
		if r, err = client.Get(strings.TrimSuffix(n.RPC, "/") + "/status"); err != nil {
			return nil, fmt.Errorf("%s /status: %w", n.Name, err)
		}
		err = json.NewDecoder(r.Body).Decode(&status)
		r.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("%s /status: %w", n.Name, err)
		}
		latest, _ := strconv.Atoi(status.Result.SyncInfo.Latest)
		for h := 1; h < min(upTo, latest); h++ {
			var resp struct {
				Result struct {
					SignedHeader struct {
						Commit struct {
							Height     string `json:"height"`
							Round      int32  `json:"round"`
							Signatures []struct {
								Flag    json.Number `json:"block_id_flag"`
								Address string      `json:"validator_address"`
							} `json:"signatures"`
						} `json:"commit"`
					} `json:"signed_header"`
				} `json:"result"`
			}
			r, err = client.Get(fmt.Sprintf("%s/commit?height=%d", strings.TrimSuffix(n.RPC, "/"), h))
			if err != nil {
				return nil, fmt.Errorf("%s /commit?height=%d: %w", n.Name, h, err)
			}
			err = json.NewDecoder(r.Body).Decode(&resp)
			r.Body.Close()
			if err != nil {
				return nil, fmt.Errorf("%s /commit?height=%d: %w", n.Name, h, err)
			}
			c := stockCommit{height: int64(h), round: resp.Result.SignedHeader.Commit.Round}
			sigs := resp.Result.SignedHeader.Commit.Signatures
			if len(sigs) != len(vals.Result.Validators) {
				return nil, fmt.Errorf("%s /commit?height=%d: %d signatures for %d validators", n.Name, h, len(sigs), len(vals.Result.Validators))
			}
			for i, s := range sigs {
				if s.Flag.String() == "1" { // BlockIDFlagAbsent
					c.absent = append(c.absent, strings.ToUpper(vals.Result.Validators[i].Address))
				}
			}
			out[n.Name] = append(out[n.Name], c)
		}
	}
	return out, nil
}
