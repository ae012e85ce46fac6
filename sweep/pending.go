package sweep

// PENDING: placeholders until the sweep branch's shared pieces land.

// Run is one run of a point.
type Run struct {
	Seed    int64              `json:"seed"`
	Dir     string             `json:"dir"`
	Metrics map[string]float64 `json:"metrics"`
}

// PointDirName names a point's directory.
func PointDirName(set map[string]string) string {
	for k, v := range set {
		return k + "=" + v
	}
	return ""
}
