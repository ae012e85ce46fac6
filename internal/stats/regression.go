package stats

// Slope is the least-squares slope of ys against xs (a straight line
// fitted by ordinary linear regression): how fast y grows per unit of x.
// ok is false when it is undefined: fewer than two points, lengths that
// differ, or every x the same.
func Slope(xs, ys []float64) (slope float64, ok bool) {
	n := len(xs)
	if n < 2 || len(ys) != n {
		return 0, false
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(n)
	my /= float64(n)
	var sxy, sxx float64
	for i := range xs {
		dx := xs[i] - mx
		sxy += dx * (ys[i] - my)
		sxx += dx * dx
	}
	if sxx == 0 {
		return 0, false
	}
	return sxy / sxx, true
}
