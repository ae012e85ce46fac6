package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/valnet/valnet/calibrate"
)

// A poor fit is a loud warning and exit 1, unless accepted; a good one
// says nothing more.
func TestPoorFitIsExitOne(t *testing.T) {
	for _, tc := range []struct {
		name   string
		res    calibrate.Result
		accept bool
		code   int // 0: no error
		says   string
	}{
		{"good", calibrate.Result{Error: 0.067}, false, 0, ""},
		{"poor", calibrate.Result{Error: 0.237}, false, exitFailed, "WARNING: POOR FIT: RMS relative error 0.237"},
		{"poor, accepted", calibrate.Result{Error: 0.237}, true, 0, "--accept-poor-fit: written anyway"},
		{"on the bound", calibrate.Result{Error: 0.05, AtBound: true}, false, exitFailed, "on the bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := poorFit(&stderr, &tc.res, tc.accept)
			code := 0
			var ee *exitError
			if errors.As(err, &ee) {
				code = ee.code
			} else if err != nil {
				t.Fatalf("error %v is not an exit code", err)
			}
			if code != tc.code || !strings.Contains(stderr.String(), tc.says) || (tc.says == "" && stderr.Len() > 0) {
				t.Errorf("exit %d (want %d), stderr:\n%s\nwant %q", code, tc.code, stderr.String(), tc.says)
			}
		})
	}
}
