package apiobjects

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

// newKey is a private key of a podCertificate keyType.
func newKey(keyType string) (crypto.Signer, error) {
	switch keyType {
	case "RSA3072":
		return rsa.GenerateKey(rand.Reader, 3072)
	case "RSA4096":
		return rsa.GenerateKey(rand.Reader, 4096)
	case "ECDSAP256":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ECDSAP384":
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ECDSAP521":
		return ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "ED25519":
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownKeyType, keyType)
}

// newKeyAndProof is kubelet's generateKeyAndProof and pemEncodeKey: a
// new key of keyType as a PEM "PRIVATE KEY" block (PKCS#8), and an empty
// PKCS#10 request signed by it (DER), the proof of possession the API
// server checks. Errors never hold the key.
func newKeyAndProof(keyType string) (keyPEM, csr []byte, err error) {
	key, err := newKey(keyType)
	if err != nil {
		return nil, nil, err
	}
	csr, err = x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("while generating stub PKCS#10 request: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("while marshaling key to PKCS#8: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), csr, nil
}

// cleanChain is kubelet's cleanCertificateChain: every PEM block of the
// signer's chain re-encoded as a bare CERTIFICATE block, dropping text
// between blocks and block headers.
func cleanChain(in []byte) []byte {
	var out bytes.Buffer
	for {
		var b *pem.Block
		b, in = pem.Decode(in)
		if b == nil {
			return out.Bytes()
		}
		out.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes}))
	}
}
