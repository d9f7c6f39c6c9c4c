package config

import (
	"encoding/base64"
	"fmt"
	"math"
	"strings"
)

// knownPlaceholders are secret values published in this repository (the
// compose file's former fallbacks, README and .env.example examples): anyone
// who read them could mint tokens or open credentials.
var knownPlaceholders = map[string]bool{
	"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=": true, // 32 zero bytes
	"change-me-insecure-placeholder-jwt-secret":    true,
	"change-me":                 true,
	"changeme":                  true,
	"replace-me":                true,
	"<openssl rand -base64 32>": true,
	"<openssl rand -base64 48>": true,
}

// placeholderWords mark a value someone meant to replace.
var placeholderWords = []string{"change-me", "changeme", "change_me", "replace-me", "replaceme", "placeholder", "insecure", "example", "your-", "<"}

// checkSecrets refuses published placeholders and low-entropy values of
// FOS_ENCRYPTION_KEY and FOS_JWT_SECRET (serve and worker; `fos dev`
// generates its own), one line per problem.
func checkSecrets(c Config) Problems {
	var p Problems
	if c.EncryptionKey != "" {
		if why := weakEncryptionKey(c.EncryptionKey); why != "" {
			p = append(p, "FOS_ENCRYPTION_KEY: "+why+"; generate one with `openssl rand -base64 32`")
		}
	}
	if c.JWTSecret != "" {
		if why := weakSecret(c.JWTSecret); why != "" {
			p = append(p, "FOS_JWT_SECRET: "+why+"; generate one with `openssl rand -base64 48`")
		} else if c.JWTSecret == c.EncryptionKey {
			p = append(p, "FOS_JWT_SECRET: must differ from FOS_ENCRYPTION_KEY")
		}
	}
	return p
}

func placeholder(v string) bool {
	if knownPlaceholders[v] {
		return true
	}
	l := strings.ToLower(v)
	for _, w := range placeholderWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// weakEncryptionKey explains why a (well-formed) base64 key is not random
// bytes, or returns "". 32 random bytes have about 30 distinct values, are
// almost never all printable ASCII and never an arithmetic run.
func weakEncryptionKey(v string) string {
	if placeholder(v) {
		return "is a published placeholder, not a secret"
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(b) != 32 {
		return "" // reported by the format check
	}
	distinct := map[byte]bool{}
	printable := true
	for _, c := range b {
		distinct[c] = true
		if c < 0x20 || c > 0x7e {
			printable = false
		}
	}
	switch {
	case len(distinct) == 1:
		return "is one byte repeated, not a random key"
	case len(distinct) < 16:
		return fmt.Sprintf("has only %d distinct bytes of 32, not a random key", len(distinct))
	case printable:
		return "decodes to printable text (a password?), not 32 random bytes"
	case arithmeticRun(b):
		return "is a counting sequence, not a random key"
	}
	return ""
}

// weakSecret explains why a JWT secret is guessable, or returns "".
func weakSecret(v string) string {
	if placeholder(v) {
		return "is a published placeholder, not a secret"
	}
	if len(v) < 32 {
		return "" // reported by the length check
	}
	distinct := map[rune]bool{}
	for _, r := range v {
		distinct[r] = true
	}
	switch {
	case len(distinct) == 1:
		return "is one character repeated"
	case len(distinct) < 6:
		return fmt.Sprintf("uses only %d different characters (a short alphabet)", len(distinct))
	case arithmeticRun([]byte(v)):
		return "is a counting sequence"
	case entropyBits(v) < minSecretBits:
		return fmt.Sprintf("has about %.0f bits of entropy by its character frequencies, at least %d are needed", entropyBits(v), minSecretBits)
	}
	return ""
}

// minSecretBits is the least entropyBits of an accepted JWT secret: below
// what any random 32-character hex string scores (about 90-130 by this
// estimate, which is noisy on 32 characters).
const minSecretBits = 64

// entropyBits estimates a string's entropy from its own character
// frequencies: Shannon entropy per character, with the Miller-Madow
// small-sample correction, times the length.
func entropyBits(v string) float64 {
	counts := map[rune]int{}
	n := 0
	for _, r := range v {
		counts[r]++
		n++
	}
	h := 0.0
	for _, c := range counts {
		p := float64(c) / float64(n)
		h -= p * math.Log2(p)
	}
	h += float64(len(counts)-1) / (2 * float64(n) * math.Ln2)
	return h * float64(n)
}

// arithmeticRun reports whether most consecutive steps of b are equal
// (abcdef…, 012345…, 0x00 0x01 0x02 …).
func arithmeticRun(b []byte) bool {
	if len(b) < 3 {
		return false
	}
	same := 0
	for i := 2; i < len(b); i++ {
		if b[i]-b[i-1] == b[i-1]-b[i-2] {
			same++
		}
	}
	return same*2 > len(b)-2
}
