package redissem_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// TestTLSAndAuth checks the promise of docs/OPERATIONS.md that AUTH and TLS
// (rediss://) work through the client's own options: against a
// redis-server with --requirepass that serves TLS, a client made by
// redis.ParseURL("rediss://:password@host:port") acquires, a waiter of a
// second semaphore (another client, as in another process) is woken by a
// Release (pub/sub over TLS), and a wrong password is ErrUnavailable.
// servertest keeps a plain port on loopback to see the server ready; the
// semaphores use only the TLS port.
func TestTLSAndAuth(t *testing.T) {
	const password = "s3cret-pw"
	dir := t.TempDir()
	caPEM := writeTLSFiles(t, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ok(t, err)
	tlsPort := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	ok(t, l.Close())
	servertest.StartRedis(t, "--requirepass", password, "--tls-port", tlsPort,
		"--tls-cert-file", filepath.Join(dir, "server.pem"),
		"--tls-key-file", filepath.Join(dir, "server.key"),
		"--tls-ca-cert-file", filepath.Join(dir, "ca.pem"),
		"--tls-auth-clients", "no")

	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA certificate not parsed")
	}
	client := func(pw string) *redis.Client {
		t.Helper()
		opt, err := redis.ParseURL("rediss://:" + pw + "@127.0.0.1:" + tlsPort)
		ok(t, err)
		if opt.TLSConfig == nil {
			t.Fatal("rediss:// gave no TLS config")
		}
		opt.TLSConfig.RootCAs = roots
		c := redis.NewClient(opt)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s1 := redissem.New(client(password), "tls", 1)
	defer s1.Close()
	s2 := redissem.New(client(password), "tls", 1)
	defer s2.Close()
	p1, err := s1.Acquire(ctx)
	ok(t, err)
	got := make(chan *core.Permit, 1)
	go func() {
		p, err := s2.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- p
	}()
	waitQueued(t, s1, 1)
	ok(t, p1.Release(ctx))
	p2 := <-got
	if p2 == nil {
		t.FailNow()
	}
	ok(t, p2.Release(ctx))

	bad := redissem.New(client("wrong-pw"), "tls", 1)
	defer bad.Close()
	if p, err := bad.Acquire(ctx); !errors.Is(err, core.ErrUnavailable) {
		if p != nil {
			_ = p.Release(ctx)
		}
		t.Fatalf("Acquire with a wrong password: err = %v, want ErrUnavailable", err)
	}
}

// writeTLSFiles writes a self-signed CA (ca.pem) and a server certificate
// for 127.0.0.1 signed by it (server.pem, server.key) into dir, and returns
// the CA's PEM.
func writeTLSFiles(t *testing.T, dir string) []byte {
	t.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ok(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "distsem test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	ok(t, err)
	ca, err := x509.ParseCertificate(caDER)
	ok(t, err)
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ok(t, err)
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	ok(t, err)
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	ok(t, err)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	write := func(name string, b []byte) { ok(t, os.WriteFile(filepath.Join(dir, name), b, 0o600)) }
	write("ca.pem", caPEM)
	write("server.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}))
	write("server.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return caPEM
}
