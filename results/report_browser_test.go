//go:build unix

package results

import (
	"bytes"
	"context"
	"github.com/valnet/valnet/results/eventlog"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHTMLReportInBrowser opens report.html in a real headless Chromium
// (Debian package "chromium"): the page must load with no console message
// (it has no script, so any message is an error), keep its four SVG charts
// in the DOM, and paint them (a screenshot must show the heat map's and the
// lines' colours). Without Chromium the test is skipped, except under CI
// (env CI set), where it fails.
//
// VALNET_REPORT_SCREENSHOT_DIR=DIR keeps the reports and screenshots
// (DIR/<name>.html, DIR/<name>.png) for a person to look at;
// VALNET_CHROMIUM names the browser binary.
func TestHTMLReportInBrowser(t *testing.T) {
	browser := findChromium()
	if browser == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium not found (apt-get install chromium); CI requires the browser test")
		}
		t.Skip("chromium not found (apt-get install chromium)")
	}
	dir := os.Getenv("VALNET_REPORT_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	runs := []struct {
		name   string
		events func(testing.TB) []eventlog.Event
	}{
		{"fixture", readFixture},
		{"remote-faults", richEvents}, // remote signers, faults, a model signer
		{"large", func(testing.TB) []eventlog.Event { return gen(benchConfig()) }},
	}
	for _, run := range runs {
		t.Run(run.name, func(t *testing.T) {
			report := filepath.Join(dir, run.name+".html")
			if err := os.WriteFile(report, []byte(htmlReport(t, run.events(t))), 0o644); err != nil {
				t.Fatal(err)
			}
			url := "file://" + report

			// 1. Load and dump the DOM: no console output, charts present.
			dom, stderr := runChromium(t, browser, "--enable-logging=stderr", "--v=0", "--dump-dom", url)
			for _, line := range strings.Split(stderr, "\n") {
				if strings.Contains(line, ":CONSOLE") || strings.Contains(line, "Uncaught") {
					t.Errorf("console: %s", line)
				}
			}
			if !strings.Contains(dom, "RESULT: ") || !strings.Contains(dom, `id="footer"`) {
				t.Fatalf("DOM is not the whole report (%d bytes):\n%.2000s", len(dom), dom)
			}
			if n := len(regexp.MustCompile(`<svg [^>]*class="chart"`).FindAllString(dom, -1)); n != 4 {
				t.Errorf("%d svg charts in the DOM, want 4", n)
			}
			if n := strings.Count(dom, "<text"); n < 40 {
				t.Errorf("only %d svg <text> elements in the DOM", n)
			}

			// 2. Paint it: the charts' colours must be on screen.
			shot := filepath.Join(dir, run.name+".png")
			runChromium(t, browser, "--hide-scrollbars", "--window-size=1400,3000", "--screenshot="+shot, url)
			img := readPNG(t, shot)
			if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 3000 {
				t.Errorf("screenshot is %v, want 1400x3000", b)
			}
			counts := countColors(img, colPresent, colAbsent, colLine)
			if counts[0] < 5000 {
				t.Errorf("heat map not painted: %d pixels of its 'present' colour", counts[0])
			}
			if counts[1] < 20 {
				t.Errorf("heat map absences not painted: %d pixels of the 'absent' colour", counts[1])
			}
			if counts[2] < 100 {
				t.Errorf("block interval line not painted: %d pixels of its colour", counts[2])
			}
			t.Logf("report %s, screenshot %s (pixels present/absent/line: %v)", report, shot, counts)
		})
	}
}

// findChromium returns the headless browser to use, or "".
func findChromium() string {
	if p := os.Getenv("VALNET_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// runChromium runs one headless Chromium with args (a throwaway profile, no
// sandbox: CI runs as root) and returns its stdout and stderr. The browser
// and its helper processes are killed if it takes longer than a minute.
func runChromium(t *testing.T, browser string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := []string{"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, browser, append(base, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v (timeout: %v)\n%s", browser, strings.Join(args, " "), err, ctx.Err() != nil, errOut.String())
	}
	return out.String(), errOut.String()
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// countColors counts the pixels of img that match each colour (within a
// small tolerance for colour conversion).
func countColors(img image.Image, cols ...color.NRGBA) []int {
	counts := make([]int, len(cols))
	b := img.Bounds()
	near := func(a uint32, b uint8) bool { d := int(a>>8) - int(b); return d >= -3 && d <= 3 }
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			for i, c := range cols {
				if near(r, c.R) && near(g, c.G) && near(bl, c.B) {
					counts[i]++
				}
			}
		}
	}
	return counts
}
