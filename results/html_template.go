package results

// htmlTemplateText is report.html. It must stay self-contained: no script,
// no external stylesheet, font, image or link; generic font families only.
// Sections carry ids (run, chain, rounds, interval, precommits, latency,
// validators, expectations, faults) that tests and links rely on.
const htmlTemplateText = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
:root { color-scheme: light; }
body { font-family: system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #f6f7f9; }
main { max-width: 1280px; margin: 0 auto; padding: 16px 24px 32px; }
h1 { font-size: 1.5em; margin: 8px 0 4px; }
h2 { font-size: 1.15em; margin: 28px 0 8px; border-bottom: 1px solid #d0d4da; padding-bottom: 4px; }
section { margin-bottom: 8px; }
.card { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 12px 16px; }
dl.run { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 8px 0 0; }
dl.run dt { color: #5a6270; }
dl.run dd { margin: 0; font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
.result { display: inline-block; font-weight: 600; padding: 4px 10px; border-radius: 4px; font-family: ui-monospace, monospace; }
.result.pass { background: #dff3e0; color: #14591b; border: 1px solid #8fcf95; }
.result.fail { background: #fde2e1; color: #8a1512; border: 1px solid #ef9a97; }
.result.error { background: #fff0cc; color: #7a4b00; border: 1px solid #f0c060; }
table { border-collapse: collapse; background: #fff; font-size: 0.9em; }
th, td { border: 1px solid #dde1e6; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #eef1f4; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; font-family: ui-monospace, monospace; }
tr.bad td { background: #fff6f5; }
tr.failed td { background: #fde2e1; }
td.pass { color: #14591b; font-weight: 600; }
td.fail { color: #8a1512; font-weight: 600; }
.scroll { overflow-x: auto; }
figure { margin: 0 0 12px; background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 8px; }
figcaption { font-size: 0.85em; color: #5a6270; margin-top: 4px; }
svg.chart { display: block; max-width: 100%; height: auto; }
.note { color: #5a6270; font-style: italic; }
.overloaded { background: #fff0cc; color: #7a4b00; border: 1px solid #f0c060; border-radius: 4px; padding: 6px 10px; margin: 8px 0; font-weight: 600; }
details { margin-top: 6px; font-size: 0.9em; }
footer { margin-top: 32px; font-size: 0.85em; color: #5a6270; border-top: 1px solid #d0d4da; padding-top: 8px; }
code { font-family: ui-monospace, monospace; }
</style>
</head>
<body>
<main>
<header id="run">
{{- if .Overloaded}}
<div class="overloaded" id="overloaded">⚠ {{.Overloaded}}</div>
{{- end}}
<h1>{{.Title}}</h1>
<div class="card">
<div class="result {{.ResultClass}}" id="result">{{.Result}}</div>
<dl class="run">
<dt>scenario</dt><dd>{{or .S.Scenario "-"}}</dd>
<dt>backend</dt><dd>{{or .S.Backend "-"}}</dd>
{{- if .Model}}
<dt>model</dt><dd id="model"><strong>{{.Model}}</strong></dd>
{{- if .Calibration}}
<dt>calibration</dt><dd>{{.Calibration}}</dd>
{{- end}}
{{- if .ModelNotes}}
<dt>the model simplifies</dt><dd><ul>{{range .ModelNotes}}<li>{{.}}</li>{{end}}</ul></dd>
{{- end}}
{{- if .NotRecorded}}
<dt>not recorded</dt><dd id="not-recorded">{{.NotRecorded}}</dd>
{{- end}}
{{- end}}
<dt>chain</dt><dd>{{or .S.ChainID "-"}}</dd>
<dt>seed</dt><dd>{{.S.Seed}}</dd>
<dt>stop reason</dt><dd>{{.S.StopReason}}</dd>
{{- if .S.Error}}
<dt>error</dt><dd>{{.S.Error}}</dd>
{{- end}}
<dt>duration</dt><dd>{{.Duration}}</dd>
</dl>
</div>
</header>

<section id="chain">
<h2>Chain</h2>
<table>
<tbody>
{{- range .Chain}}
<tr><th scope="row">{{.K}}</th><td>{{.V}}</td></tr>
{{- end}}
</tbody>
</table>
</section>

<section id="rounds">
<h2>Commit rounds</h2>
<figure>
{{template "chart" .Rounds}}
<figcaption>Round in which each committed height was decided (from the next block's LastCommit; for the last height, its commit step). {{if .S.Faults}} Shaded: scenario faults, spanning the heights in progress while they were active.{{end}}</figcaption>
</figure>
</section>

<section id="interval">
<h2>Block interval</h2>
<figure>
{{template "chart" .Interval}}
<figcaption>Time between consecutive commits: each interval is a horizontal segment from one commit to the next.{{if .S.Faults}} Shaded: scenario faults (see the table below).{{end}}</figcaption>
</figure>
</section>

<section id="precommits">
<h2>Precommits</h2>
<figure>
{{template "chart" .Heatmap}}
<figcaption>One row per validator, one column per height: its precommit for that height as the next block's LastCommit recorded it (present, absent, or nil); unknown where the next block was not committed during the run.</figcaption>
{{- if .HeatmapList}}
<details{{if le (len .HeatmapList) 12}} open{{end}}><summary>Absent and nil precommits by validator</summary>
<ul>
{{- range .HeatmapList}}
<li><code>{{.K}}</code>: {{.V}}</li>
{{- end}}
</ul>
</details>
{{- else}}
<p class="note">No absent or nil precommits.</p>
{{- end}}
</figure>
</section>

<section id="latency">
<h2>Signing latency</h2>
<figure>
{{template "chart" .Latency}}
<figcaption>Cumulative distribution of signing latency per phase, one line per validator (successful signatures; the whole call as the node saw it, injected delay included).{{if .Remote}} Dashed: the same signatures as the remote signer saw them (inside the backend).{{end}}{{if .LatencyLog}} Logarithmic x axis: the samples span more than two decades.{{end}}</figcaption>
</figure>
</section>

<section id="validators">
<h2>Validators</h2>
<p class="note">missed = precommits absent from the next block / heights counted; quorum-critical = heights whose +2/3 of precommits waited for this validator's (heights.csv names them per height); signing latency in ms, p50/p99{{if .Remote}}; signer side = inside the backend, transport = node side minus signer side{{end}}.</p>
<div class="scroll">
<table>
<thead><tr><th>validator</th><th>signer</th><th>missed</th><th>nil</th><th>quorum-critical</th><th>proposals</th><th>proposal</th><th>prevote</th><th>precommit</th><th>sign errors</th>
{{- if .Remote}}<th>signer side</th><th>transport overhead</th><th>signatures matched</th>{{end}}</tr></thead>
<tbody>
{{- $remote := .Remote}}
{{- range .Validators}}
<tr{{if .Bad}} class="bad"{{end}}><td><code title="{{.Address}}">{{.Name}}</code></td><td>{{.Signer}}</td><td class="num">{{.Missed}}</td><td class="num">{{.Nil}}</td><td class="num">{{.Quorum}}</td><td class="num">{{.Proposals}}</td><td class="num">{{.Proposal}}</td><td class="num">{{.Prevote}}</td><td class="num">{{.Precommit}}</td><td class="num">{{.SignErrors}}</td>
{{- if $remote}}<td class="num">{{.SignerSide}}</td><td class="num">{{.Transport}}</td><td class="num">{{.SigsMatched}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
</div>
{{- if .NotRecorded}}
<p class="note">{{.NotRecorded}}.</p>
{{- end}}
</section>
{{- with .Devices}}{{template "tableSection" .}}{{end}}
{{- with .Threshold}}{{template "tableSection" .}}{{end}}
{{- with .PeerNodes}}{{template "tableSection" .}}{{end}}

<section id="causes">
<h2>Why votes were missed</h2>
<p class="note">Each missed precommit classified from the event stream (missed.csv lists each): signer-late = the signer returned it after the height was decided, or was still busy then; signer-failed = the signer refused or failed; node-down = the node was stopped, killed or paused; node-behind = the node was late to ask for it (catching up, or the proposal and votes reached it late); host-overload = the machine running the network was saturated; network = signed in time but absent from the next block. Late votes: rounds whose vote reached most nodes after they already had +2/3.</p>
<div class="scroll">
<table>
<thead><tr><th>validator</th><th>missed</th><th>signer-late</th><th>signer-failed</th><th>node-down</th><th>node-behind</th><th>host-overload</th><th>network</th><th>unknown</th><th>longest run</th><th>late prevotes</th><th>late precommits</th></tr></thead>
<tbody>
{{- range .Validators}}
<tr><td><code>{{.Name}}</code></td><td class="num">{{.MissedN}}</td><td class="num">{{.Causes.SignerLate}}</td><td class="num">{{.Causes.SignerFailed}}</td><td class="num">{{.Causes.NodeDown}}</td><td class="num">{{.Causes.NodeBehind}}</td><td class="num">{{.Causes.HostOverload}}</td><td class="num">{{.Causes.Network}}</td><td class="num">{{.Causes.Unknown}}</td><td class="num">{{.LongestRun}}</td><td class="num">{{.LatePrevotes}}</td><td class="num">{{.LatePrec}}</td></tr>
{{- end}}
</tbody>
</table>
</div>
{{- if .NotRecorded}}
<p class="note">{{.NotRecorded}}.</p>
{{- end}}
{{- if .S.RoundChanges}}
<h3>Round changes</h3>
<table>
<thead><tr><th>height</th><th>round</th><th>cause</th><th>proposer</th><th>detail</th></tr></thead>
<tbody>
{{- range .S.RoundChanges}}
<tr><td class="num">{{.Height}}</td><td class="num">{{.Round}}</td><td>{{.Cause}}</td><td><code>{{.Proposer}}</code></td><td>{{.Detail}}</td></tr>
{{- end}}
</tbody>
</table>
{{- else}}
<p class="note">Every height was decided in its first round.</p>
{{- end}}
</section>

<section id="expectations">
<h2>Expectations</h2>
{{- if .Expect}}
<table>
<thead><tr><th>result</th><th>expectation</th><th>bound</th><th>value</th>{{if .Warned}}<th>warning</th>{{end}}</tr></thead>
<tbody>
{{- $warned := .Warned}}
{{- range .Expect}}
<tr{{if not .OK}} class="failed"{{end}}><td class="{{if .OK}}pass{{else}}fail{{end}}">{{if .OK}}PASS{{else}}FAIL{{end}}</td><td><code>{{.Subject}}</code></td><td>{{.Bounds}}</td><td class="num">{{.Value}}</td>{{if $warned}}<td>{{if .Warning}}⚠ {{.Warning}}{{end}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
{{- else}}
<p class="note">The scenario set no expectations.</p>
{{- end}}
</section>

<section id="faults">
<h2>Faults</h2>
{{- if .Faults}}
<table>
<thead><tr><th>action</th><th>target</th><th>start</th><th>end</th><th>length</th><th>detail</th></tr></thead>
<tbody>
{{- range .Faults}}
<tr><td><code>{{.Action}}</code></td><td><code>{{.Target}}</code></td><td class="num">{{.Start}}</td><td class="num">{{.End}}</td><td class="num">{{.Length}}</td><td>{{.Detail}}</td></tr>
{{- end}}
</tbody>
</table>
<p class="note">Times in seconds since the run started.</p>
{{- else}}
<p class="note">No scenario faults.</p>
{{- end}}
</section>

<footer id="footer">
{{- if .Models}}
<p><strong>Simulated signers are models.</strong> These validators' signers simulate a device or service from a model rather than measure one, so their latencies are the model's, not hardware's:
{{- range $i, $m := .Models}}{{if $i}},{{end}} <code>{{$m.K}}</code> ({{$m.V}}){{end}}.</p>
{{- end}}
<p>Built by valnet from the run's <code>events.jsonl</code> alone; <code>valnet report RUN_DIR</code> rebuilds it.</p>
</footer>
</main>
</body>
</html>
{{define "tableSection"}}

<section id="{{.ID}}">
<h2>{{.Title}}</h2>
<p class="note">{{.Note}}.</p>
<div class="scroll">
{{- range .Tables}}
{{template "textTable" .}}
{{- end}}
</div>
</section>
{{- end}}
{{define "textTable"}}<table>
<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>{{end}}
{{define "chart"}}{{if .SVG}}{{.SVG}}{{else}}<p class="note">{{.Note}}</p>{{end}}{{end}}`
