package scenarios

import (
	"reflect"
	"testing"
	"time"
)

func init() { goodChecks["devices"] = checkDevicesPlan }

// checkDevicesPlan: defaults of background, the device's profile given to
// a simulated signer on it, and signers off any device untouched.
func checkDevicesPlan(t *testing.T, p *Plan) {
	want := map[string]DevicePlan{
		"hsm": {Name: "hsm", Profile: "yubihsm2", Background: &BackgroundPlan{Chains: 9, BlockTime: 6 * time.Second,
			ProposerShare: 0.25, Spacing: 100 * time.Millisecond, Jitter: 50 * time.Millisecond}},
		"busy": {Name: "busy", Profile: "my-hsm", Background: &BackgroundPlan{Chains: 3, BlockTime: time.Second,
			ProposerShare: 0.5, Spacing: 50 * time.Millisecond, Jitter: 0}},
		"token": {Name: "token"},
	}
	if !reflect.DeepEqual(p.Devices, want) {
		t.Errorf("devices:\n got %+v\nwant %+v", p.Devices, want)
	}
	for _, tc := range []struct{ validator, device, profile string }{
		{"v-1", "hsm", "yubihsm2"},
		{"v-2", "hsm", "yubihsm2"},
		{"p", "token", ""},
		{"l", "token", ""},
		{"plain", "", "yubihsm2"},
	} {
		var got *SignerPlan
		for i := range p.Validators {
			if p.Validators[i].Name == tc.validator {
				got = &p.Validators[i].Signer
			}
		}
		if got == nil {
			t.Errorf("no validator %s", tc.validator)
			continue
		}
		if got.Device != tc.device || got.Profile != tc.profile {
			t.Errorf("%s: device %q profile %q, want %q %q", tc.validator, got.Device, got.Profile, tc.device, tc.profile)
		}
	}
}
