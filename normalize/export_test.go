package normalize

// For the external tests: referenceNFC and referenceNFD
// (compose_test.go) and allAssigned.
var (
	ReferenceNFC = referenceNFC
	ReferenceNFD = func(s string) string { return string(referenceNFD(s)) }
	AllAssigned  = allAssigned
)
