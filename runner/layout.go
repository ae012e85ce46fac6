package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Files of a run directory.
const (
	EventsFile   = "events.jsonl"
	SummaryFile  = "summary.json"
	HeightsFile  = "heights.csv"
	NetworkFile  = "network.json"
	ScenarioFile = "scenario.yaml"
	NodesDir     = "nodes"
)

// DefaultOutDir is runs/<scenario>-<timestamp> under the working directory.
func DefaultOutDir(scenario string, now time.Time) string {
	return filepath.Join("runs", scenario+"-"+now.Format("20060102-150405"))
}

// CheckOutDir refuses a directory that already holds a run: a new run
// must never overwrite the results of an earlier one. A command checks
// first so that it announces only a run that goes ahead; Run checks again.
func CheckOutDir(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, EventsFile)); err == nil {
		return fmt.Errorf("%s already holds a run (%s exists); choose another --out", dir, EventsFile)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// prepareOutDir creates dir (CheckOutDir first). The nodes' homes under
// nodes/ are made by the backends that run nodes, so a sim run has none.
func prepareOutDir(dir string) error {
	if err := CheckOutDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	return nil
}
