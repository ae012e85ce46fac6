package scenarios

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/latency"
)

// TestPKCS11Plans checks what testdata/pkcs11.good.yaml resolves to:
// provision defaults, paths joined to the scenario's directory, and one
// PKCS11Plan per expanded validator. (The bad file is one of the
// TestBadScenarios goldens.)
func TestPKCS11Plans(t *testing.T) {
	p, err := Load("testdata/pkcs11.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base := SignerPlan{Type: SignerPKCS11, KeyType: KeyEd25519, Via: ViaDirect, CPUScale: 1}
	with := func(f func(*SignerPlan)) SignerPlan {
		s := base
		f(&s)
		return s
	}
	want := map[string]SignerPlan{
		"soft": with(func(s *SignerPlan) {
			s.PKCS11 = &PKCS11Plan{Provision: ProvisionSoftHSM, Key: "consensus"}
		}),
		"soft-named-1": with(func(s *SignerPlan) {
			s.Via = ViaTCP
			s.PKCS11 = &PKCS11Plan{Provision: ProvisionSoftHSM, Module: filepath.Join("testdata", "lib", "libsofthsm2.so"), Key: "validator"}
		}),
		"soft-token": with(func(s *SignerPlan) {
			s.PKCS11 = &PKCS11Plan{Provision: ProvisionSoftHSM, Token: "my.token_1", Key: "consensus"}
		}),
		"yubi": with(func(s *SignerPlan) {
			s.Latency = &LatencyPlan{Spec: latency.Spec{Dist: latency.Fixed, Value: 10 * time.Millisecond}, Phases: phase.All()}
			s.PKCS11 = &PKCS11Plan{Module: "/usr/lib/x86_64-linux-gnu/pkcs11/yubihsm_pkcs11.so", Token: "YubiHSM", Key: "consensus", PinEnv: "VALNET_HSM_PIN"}
		}),
		"by-slot": with(func(s *SignerPlan) {
			s.Via = ViaUnix
			s.PKCS11 = &PKCS11Plan{Module: "/opt/hsm/libhsm.so", Slot: 0, HasSlot: true, Key: "validator key", PinFile: filepath.Join("testdata", "secrets", "hsm.pin")}
		}),
	}
	byName := map[string]SignerPlan{}
	for _, v := range p.Validators {
		byName[v.Name] = v.Signer
	}
	for name, w := range want {
		if got := byName[name]; !reflect.DeepEqual(got, w) {
			t.Errorf("%s:\n got %+v %+v\nwant %+v %+v", name, got, got.PKCS11, w, w.PKCS11)
		}
	}
	a, b := byName["soft-named-1"].PKCS11, byName["soft-named-2"].PKCS11
	if a == nil || a == b || !reflect.DeepEqual(a, b) {
		t.Errorf("expanded validators must have equal but separate PKCS11 plans: %p %p", a, b)
	}
}
