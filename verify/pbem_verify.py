#!/usr/bin/env python3
"""pbem_verify: checks a public copy of a pbem game without pbem, from SPEC.md alone.

Usage: python3 pbem_verify.py GAME_DIR|GAME.tar      (or: python3 pbem_verify.py --self-test)

GAME_DIR holds game.toml, scenario.toml, records/ and receipts/ (states/ once the game is over;
host/ and reports/ are not read; a file in records/, receipts/ or states/ not named like a record,
receipt or state, say notes.txt, is ignored, as pbem ignores it). GAME.tar is a public copy as
`pbem public` writes it (the archive a game's web page offers): only the files of a public copy
(game.toml, scenario.toml, records/NNNNNN.json and receipts/NNNNNN/ROLE-K.toml, each record and
receipt with its .sig), under one folder, which is unpacked into a temporary folder, removed
afterwards; failures name the file in the archive (`GAME.tar:GAME/records/000003.json`). Checked,
as SPEC.md states them: every record's and receipt's host signature and every order's seat
signature (with the real `ssh-keygen -Y verify` and an allowed-signers file written from game.toml
into a temporary folder that is removed afterwards, the signed bytes on its standard input; for
every key type pbem accepts: Ed25519, ECDSA nistp256/384/521, RSA of 2048 bits or more,
sk-ssh-ed25519@openssh.com, sk-ecdsa-sha2-nistp256@openssh.com), the hash chain, record 0's setup
hash (followed through the host's seat changes to game.toml), the host controls (SPEC.md "Host
controls"), every host seed against its commitment, every revealed order (its seat's signature, its
commitment against its receipt, its header, its [orders] against the record), every receipt,
every step seed whose nonces are public, every logged roll and draw re-derived from the step seed
(ChaCha20 of RFC 8439, written below), the state commitments once the last record reveals the
key, deadlines, NMR times and receipt times. What needs the game's rules (the legality of orders,
default and built-in players' orders, the events themselves, when withheld orders fall due, and
the outcome and winner of a game played to its end, shown as the host signed them) is left to
`pbem audit`, which replays every step.

Exit status: 0 and a summary when everything holds; 1 and `FAIL: FILE: FIELD: what` for the first
failure; 2 when it cannot run (a usage error, no ssh-keygen or one without `-Y verify`, an archive
that is no tar or holds links, absolute or `..` paths, a second folder, a file that is not of a
public copy, or more than 1 GiB or a million files). Python 3.11+ standard library only.
"""

import base64
import binascii
import copy
import datetime
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tarfile
import tempfile

try:
    import tomllib
except ImportError:  # Python before 3.11
    print("pbem_verify: needs Python 3.11 or later (for tomllib)", file=sys.stderr)
    sys.exit(2)

# ---------------------------------------------------------------------------------------------
# ChaCha20 (RFC 8439) and the draws of SPEC.md "Dice"
# ---------------------------------------------------------------------------------------------

MASK = 0xFFFFFFFF


def _rotl(x, n):
    return ((x << n) & MASK) | (x >> (32 - n))


def _quarter(s, a, b, c, d):
    s[a] = (s[a] + s[b]) & MASK
    s[d] = _rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & MASK
    s[b] = _rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & MASK
    s[d] = _rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & MASK
    s[b] = _rotl(s[b] ^ s[c], 7)


def chacha20_block(key, counter, nonce):
    """RFC 8439 section 2.3: the 64-byte block for a 32-byte key, 32-bit counter, 12-byte nonce."""
    assert len(key) == 32 and len(nonce) == 12 and 0 <= counter <= MASK
    const = (0x61707865, 0x3320646E, 0x79622D32, 0x6B206574)
    init = list(const) + list(struct.unpack("<8I", key)) + [counter] + list(struct.unpack("<3I", nonce))
    s = list(init)
    for _ in range(10):
        _quarter(s, 0, 4, 8, 12)
        _quarter(s, 1, 5, 9, 13)
        _quarter(s, 2, 6, 10, 14)
        _quarter(s, 3, 7, 11, 15)
        _quarter(s, 0, 5, 10, 15)
        _quarter(s, 1, 6, 11, 12)
        _quarter(s, 2, 7, 8, 13)
        _quarter(s, 3, 4, 9, 14)
    return struct.pack("<16I", *[(x + y) & MASK for x, y in zip(s, init)])


class Stream:
    """The step's generator: the ChaCha20 keystream of the 32-byte seed as key, nonce 0 and the
    block counter from 0, read as consecutive little-endian 32-bit words (SPEC.md "Dice"; a 64-bit
    block counter carries into the first nonce word, as rand_chacha's ChaCha20Rng does)."""

    def __init__(self, seed):
        self.key = bytes(seed)
        self.block = 0
        self.words = []

    def next_u32(self):
        if not self.words:
            nonce = struct.pack("<I", self.block >> 32) + bytes(8)
            self.words = list(struct.unpack("<16I", chacha20_block(self.key, self.block & MASK, nonce)))
            self.block += 1
        return self.words.pop(0)

    def below(self, n):
        """A value in 0..n: reject a word x while x >= 2^32 - (2^32 mod n), then x mod n."""
        zone = (1 << 32) - ((1 << 32) % n)
        while True:
            x = self.next_u32()
            if x < zone:
                return x % n


# ---------------------------------------------------------------------------------------------
# The hash constructions of SPEC.md "Encoding"
# ---------------------------------------------------------------------------------------------


def fields_hash(tag, *fields):
    """H(tag, fields...): each bytes/str field as a 4-byte big-endian length and its bytes, each
    int as 8 bytes big-endian; the tag is the first length-prefixed field."""
    h = hashlib.sha256()
    for f in (tag,) + fields:
        if isinstance(f, int):
            h.update(struct.pack(">Q", f))
        else:
            b = f.encode() if isinstance(f, str) else bytes(f)
            h.update(struct.pack(">I", len(b)) + b)
    return h.hexdigest()


def host_seed_commitment(game, step, seed):
    return fields_hash("pbem/host-seed-commitment/v1", game, step, seed)


def order_commitment(game, step, role, signed):
    return fields_hash("pbem/order-commitment/v1", game, step, role, signed)


def step_seed(game, step, host_seed, nonces):
    """nonces: {role: 32 bytes} over every asked role; sorted byte-wise by role."""
    items = sorted(nonces.items(), key=lambda kv: kv[0].encode())
    flat = [x for role, nonce in items for x in (role, nonce)]
    return fields_hash("pbem/step-seed/v1", game, step, host_seed, len(items), *flat)


def state_commitment(game, index, key, state):
    return fields_hash("pbem/state-commitment/v1", game, index, key, state)


def setup_hash(game_toml, scenario):
    return hashlib.sha256(b"".join(struct.pack(">Q", len(p)) + p for p in (game_toml, scenario))).hexdigest()


def self_test():
    """RFC 8439's block vector (2.3.2) and keystream vector (2.4.2), and SPEC.md's vectors."""
    key = bytes(range(32))
    block = chacha20_block(key, 1, bytes.fromhex("000000090000004a00000000"))
    assert block.hex() == (
        "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
        "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"), "RFC 8439 2.3.2"
    plain = (b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the "
             b"future, sunscreen would be it.")
    nonce = bytes.fromhex("000000000000004a00000000")
    stream = b"".join(chacha20_block(key, 1 + i, nonce) for i in range(2))
    cipher = bytes(p ^ k for p, k in zip(plain, stream))
    assert cipher.hex().startswith("6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b"), "RFC 8439 2.4.2"
    s = Stream(bytes(32))
    assert [s.next_u32() for _ in range(4)] == [2917185654, 2419978656, 3848953152, 683509331], "SPEC Dice words"
    s = Stream(bytes(32))
    assert [s.below(6) + 1 for _ in range(12)] == [1, 1, 1, 6, 6, 1, 3, 6, 5, 4, 2, 5], "SPEC Dice d6"
    assert host_seed_commitment("g1", 1, b"\x11" * 32) == "ba55dc64ee6ac0be27363511e81d220b20584911795b779bcaa01682feb2be67"
    assert order_commitment("g1", 1, "union", b"[orders]\n") == "1a0cd7e2ca8b61b33af9820cd3c21be9cfdb14fc1c8bf2d543b4a0fc6f823a9f"
    assert step_seed("g1", 1, b"\x11" * 32, {"confederate": bytes(32), "union": b"\x22" * 32}) == \
        "99cb422bb6a51a59d2252bc4e003f2aeea0eb501813c8e93e845120f0db8daad"
    assert state_commitment("g1", 3, b"\x33" * 32, b"{}\n") == "76394face181c1c796fcd3d7a5dacad45dfe43be710a5e53abcf9668510b8d24"


# ---------------------------------------------------------------------------------------------
# Failures, files, times
# ---------------------------------------------------------------------------------------------


class Fail(Exception):
    """The first failure: the file (relative to the game folder), the field, and what is wrong."""

    def __init__(self, path, field, what):
        super().__init__(what)
        self.path, self.field, self.what = path, field, what


class CannotRun(Exception):
    """The verifier cannot go on (ssh-keygen missing or not runnable): exit 2, not a failure of the game."""


HEX64 = re.compile(r"^[0-9a-f]{64}$")
# The names of a record (records/) and of a receipt (receipts/NNNNNN/), each with its signature.
RECORD_NAME = re.compile(r"[0-9]{6}\.json(\.sig)?")
RECEIPT_NAME = re.compile(r"(.+)-([0-9]+)\.toml(\.sig)?")


def hex32(path, field, value):
    if not isinstance(value, str) or not HEX64.match(value):
        raise Fail(path, field, f"{value!r} is not 64 lowercase hex digits")
    return bytes.fromhex(value)


def parse_time(path, field, value):
    """An RFC 3339 time; `Z` or an offset."""
    try:
        t = datetime.datetime.fromisoformat(value)
    except (TypeError, ValueError):
        t = None
    if t is None or t.tzinfo is None:
        raise Fail(path, field, f"{value!r} is not an RFC 3339 time")
    return t.astimezone(datetime.timezone.utc)


def stamp(t):
    """A time as pbem writes it: UTC, whole seconds, `Z`."""
    return t.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Game:
    """The game folder and the ssh-keygen verifier."""

    def __init__(self, root, tmp):
        self.root, self.tmp = root, tmp
        self.sig_count = 0

    def read(self, rel):
        """A regular file's bytes: a FIFO is opened without waiting for a writer and, like a
        device (a link to /dev/zero) or a folder, refused unread, as pbem refuses them."""
        try:
            fd = os.open(os.path.join(self.root, rel), os.O_RDONLY | os.O_NONBLOCK)
        except OSError as e:
            raise Fail(rel, None, f"cannot read: {e.strerror}")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise Fail(rel, None, "not a regular file (a FIFO, a device or a folder); not read")
        with os.fdopen(fd, "rb") as f:
            try:
                return f.read()
            except OSError as e:
                raise Fail(rel, None, f"cannot read: {e.strerror}")

    def exists(self, rel):
        return os.path.exists(os.path.join(self.root, rel))

    def listdir(self, rel):
        p = os.path.join(self.root, rel)
        return sorted(os.listdir(p)) if os.path.isdir(p) else None

    def write_allowed_signers(self, host_key, seats):
        """allowed_signers: principal `host` for records and receipts, `seat:ROLE` for orders."""
        lines = [f'host namespaces="pbem-record,pbem-receipt" {host_key}']
        lines += [f'seat:{role} namespaces="pbem-orders" {key}' for role, key in seats.items()]
        self.allowed = os.path.join(self.tmp, "allowed_signers")
        with open(self.allowed, "w") as f:
            f.write("\n".join(lines) + "\n")

    def verify_sig(self, principal, namespace, data, signature, path, field):
        """`ssh-keygen -Y verify` of `data` against the armored `signature`."""
        sig_file = os.path.join(self.tmp, "sig")
        with open(sig_file, "wb") as f:
            f.write(signature if isinstance(signature, bytes) else signature.encode())
        cmd = ["ssh-keygen", "-Y", "verify", "-f", self.allowed, "-I", principal, "-n", namespace, "-s", sig_file]
        try:
            p = subprocess.run(cmd, input=data, capture_output=True)
        except OSError as e:
            raise CannotRun(f"cannot run ssh-keygen ({e.strerror or e}): OpenSSH's ssh-keygen (8.2 or later) is needed to check signatures")
        self.sig_count += 1
        if p.returncode != 0:
            why = (p.stderr or p.stdout).decode(errors="replace").strip().splitlines()
            if any(line.startswith("usage:") or "illegal option" in line or "unknown option" in line for line in why):
                raise CannotRun("this ssh-keygen cannot verify signatures (`ssh-keygen -Y verify` needs OpenSSH 8.2 or later)")
            raise Fail(path, field, f"signature does not verify for {principal} in namespace {namespace}"
                       f" (ssh-keygen: {why[-1] if why else 'failed'})")


# The key types pbem accepts for seats and the host (SPEC.md "Order files and signatures"): the
# fields of each one's public-key blob after its type name, and RSA's least modulus size.
KEY_FIELDS = {
    "ssh-ed25519": 1,  # the 32-byte key
    "ecdsa-sha2-nistp256": 2, "ecdsa-sha2-nistp384": 2, "ecdsa-sha2-nistp521": 2,  # curve, point
    "ssh-rsa": 2,  # e, n
    "sk-ssh-ed25519@openssh.com": 2,  # key, application
    "sk-ecdsa-sha2-nistp256@openssh.com": 3,  # curve, point, application
}
MIN_RSA_BITS = 2048


def ssh_strings(blob):
    """The SSH `string`s (4-byte big-endian length, then the bytes) that make up `blob` exactly,
    or None when a length runs past the end."""
    out = []
    while blob:
        if len(blob) < 4:
            return None
        n = struct.unpack(">I", blob[:4])[0]
        if n > len(blob) - 4:
            return None
        out.append(blob[4:4 + n])
        blob = blob[4 + n:]
    return out


def key_of(line, path, field):
    """`TYPE BASE64` of an OpenSSH public-key line (the comment dropped), of a type pbem accepts:
    Ed25519, ECDSA nistp256/384/521, RSA of at least 2048 bits, sk-ssh-ed25519@openssh.com or
    sk-ecdsa-sha2-nistp256@openssh.com. The key blob must name the line's type and hold that
    type's fields, nothing more (`ssh-keygen -Y verify` checks the signatures themselves)."""
    parts = line.split() if isinstance(line, str) else []
    if len(parts) < 2 or not parts[1].startswith("AAAA"):
        raise Fail(path, field, "not an OpenSSH public key line (TYPE AAAA... [comment])")
    kind, b64 = parts[0], parts[1]
    if kind not in KEY_FIELDS:
        raise Fail(path, field, f"a key of type {kind}, which pbem does not accept (Ed25519, ECDSA nistp256/384/521, RSA of "
                   f"{MIN_RSA_BITS} bits or more, sk-ssh-ed25519@openssh.com, sk-ecdsa-sha2-nistp256@openssh.com)")
    try:
        blob = base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError):
        blob = None
    fields = ssh_strings(blob) if blob else None
    if not fields or fields[0] != kind.encode() or len(fields) != 1 + KEY_FIELDS[kind]:
        raise Fail(path, field, f"not a valid {kind} public key (its base64 blob does not hold a {kind} key)")
    curve = re.search(r"nistp[0-9]+", kind)
    if curve and fields[1] != curve.group().encode():
        raise Fail(path, field, f"not a valid {kind} public key (its curve is {fields[1].decode(errors='replace')!r})")
    if "ed25519" in kind and len(fields[1]) != 32:
        raise Fail(path, field, f"not a valid {kind} public key (its key is {len(fields[1])} bytes, not 32)")
    if kind == "ssh-rsa":
        bits = int.from_bytes(fields[2], "big").bit_length()
        if bits < MIN_RSA_BITS:
            raise Fail(path, field, f"a {bits}-bit RSA key: pbem accepts RSA keys of at least {MIN_RSA_BITS} bits")
    return f"{kind} {b64}"


def order_toml(text):
    """An order's text as TOML: without one leading byte-order mark (SPEC "Orders": a file signed
    un-normalized keeps the BOM Windows Notepad writes in its signed bytes; pbem's TOML reader
    skips it, tomllib refuses it)."""
    return text[1:] if text.startswith("\ufeff") else text


def toml_of(path, data):
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise Fail(path, None, f"not TOML: {e}")


def need(path, obj, field, kind, nullable=False, label=None):
    """obj[field], of type `kind` (str, int, list or dict; None allowed when `nullable`)."""
    v = obj.get(field) if isinstance(obj, dict) else None
    if v is None and nullable:
        return None
    if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
        raise Fail(path, label or field, f"missing or not a {kind.__name__} ({v!r})")
    return v


# ---------------------------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------------------------

RECORD_KEYS = ["game", "index", "prev", "setup", "control", "resolution", "state", "state_key", "reveals", "opening", "outcome"]
RESOLUTION_KEYS = {"step", "host_seed", "orders", "seed", "events", "resolved"}
ORDER_KEYS = {"role", "seq", "commitment", "text", "signature", "orders", "nmr", "withheld", "withheld_until"}
REVEAL_KEYS = {"step", "role", "text", "signature", "orders"}
OPENING_KEYS = {"step", "asks", "host_seed_commitment", "opened", "deadline"}
CONTROL_KEYS = {"action", "at", "reason"}
SEAT_KEYS = {"role", "email", "key", "before"}  # and "time_zone" when the change set the seat's zone
ACTIONS = ("seat", "deadline", "pause", "resume", "abandon", "resign", "draw")
ENDS = ("abandon", "resign", "draw")
SIGNED_KEYS = {"step", "role", "seq", "text", "signature"}
# Written in [orders] but the judge's, not the game's (SPEC.md "Ending by the players").
ENDING_KEYS = ("resign", "draw")
RECEIPT_KEYS = {"game", "step", "role", "seq", "commitment", "received", "nonce", "setup", "record"}
HEADER_KEYS = {"game", "step", "role", "host_seed_commitment", "nonce"}


def rec_name(n):
    return f"records/{n:06d}.json"


class Checker:
    """Checks one game folder; `run` returns the summary lines or raises Fail."""

    def __init__(self, g):
        self.g = g
        self.rolls = 0
        self.orders = 0
        self.nmr = 0
        self.seeds = 0
        self.nonces = {}
        self.notes = []

    # -- game.toml, scenario.toml ------------------------------------------------------------
    def load_game(self):
        gt = self.g.read("game.toml")
        self.gt = gt
        t = toml_of("game.toml", gt)
        self.id = need("game.toml", t, "id", str)
        self.wording = t.get("wording", 0)  # the report wording the game keeps (0: made before the mark)
        if not isinstance(self.wording, int) or isinstance(self.wording, bool) or self.wording < 0:
            raise Fail("game.toml", "wording", f"{self.wording!r} is not a whole number")
        host = key_of(t.get("host_key"), "game.toml", "host_key")
        d = need("game.toml", t, "deadlines", dict)
        self.default_hours = need("game.toml", d, "default_hours", int, label="deadlines.default_hours")
        self.grace_hours = need("game.toml", d, "grace_hours", int, label="deadlines.grace_hours")
        self.kinds = d.get("kinds", {})
        nmr = t.get("nmr", {"policy": "defaults", "bot_after": 0})
        self.policy = need("game.toml", nmr, "policy", str, label="nmr.policy")
        self.bot_after = nmr.get("bot_after", 0)
        if self.policy not in ("defaults", "wait", "bot"):
            raise Fail("game.toml", "nmr.policy", f"{self.policy!r} is not defaults, wait or bot")
        self.seats = {}
        for i, s in enumerate(t.get("seat", [])):
            role = need("game.toml", s, "role", str, label=f"seat[{i}].role")
            if not re.match(r"^[A-Za-z0-9_.-]+$", role) or role in self.seats:
                raise Fail("game.toml", f"seat[{i}].role", f"{role!r} is not a distinct role name")
            self.seats[role] = key_of(s.get("key"), "game.toml", f"seat[{i}].key")
        self.host = host
        self.g.write_allowed_signers(host, {})

    def hours_for(self, kinds):
        """The longest of the asked kinds' hours (`default_hours` for a kind not listed)."""
        return max((self.kinds.get(k, self.default_hours) for k in kinds), default=self.default_hours)

    # -- records: signatures, canonical form, chain ------------------------------------------
    def load_records(self):
        names = self.g.listdir("records")
        if not names:
            raise Fail("records", None, "missing or empty")
        nums = set()
        for name in names:
            # Another file (notes, an editor's backup, a temporary file of an interrupted write)
            # is no part of the game: pbem ignores it too. One named like a record must be one.
            if not name.endswith((".json", ".json.sig")):
                continue
            if not RECORD_NAME.fullmatch(name):
                raise Fail(f"records/{name}", None, "not a record file (records/NNNNNN.json and NNNNNN.json.sig)")
            nums.add(int(name[:6]))
        if not nums:
            raise Fail("records", None, "holds no record")
        last = max(nums)
        missing = [n for n in range(last + 1) if n not in nums]
        if missing:
            raise Fail(rec_name(missing[0]), None, f"missing: records are numbered 0..{last} without gaps")
        self.bytes, self.recs = [], []
        for n in range(last + 1):
            path = rec_name(n)
            b = self.g.read(path)
            if not self.g.exists(path + ".sig"):
                raise Fail(path + ".sig", None, "missing: every record is host-signed")
            self.g.verify_sig("host", "pbem-record", b, self.g.read(path + ".sig"), path + ".sig", None)
            try:
                r = json.loads(b.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as e:
                raise Fail(path, None, f"not JSON: {e}")
            if not isinstance(r, dict) or [k for k in r if k not in RECORD_KEYS]:
                raise Fail(path, None, f"not a record (fields: {', '.join(RECORD_KEYS)})")
            if (json.dumps(r, indent=2, ensure_ascii=False) + "\n").encode() != b:
                raise Fail(path, None, "not in canonical form (pretty JSON, two-space indent, one final newline)")
            if r.get("game") != self.id:
                raise Fail(path, "game", f"{r.get('game')!r} is not this game ({self.id})")
            if r.get("index") != n:
                raise Fail(path, "index", f"{r.get('index')!r}: want {n}")
            want = None if n == 0 else hashlib.sha256(self.bytes[-1]).hexdigest()
            if r.get("prev") != want:
                raise Fail(path, "prev", f"is not the SHA-256 of {rec_name(n - 1)} (a broken chain link)" if n else "must be null")
            self.bytes.append(b)
            self.recs.append(r)
        self.last = last

    # -- the setup through the seat changes, and which records stood while each step was open --
    def follow_setup(self):
        """Record 0's setup is that of the game.toml the first seat change keeps (`before`), or of
        game.toml; each seat change names the setup of the next text (the next change's `before`,
        or game.toml), which differs only in that seat's email, key and (if it names one) time
        zone. Sets the version of game.toml in force after each record and the seat keys of every
        version."""
        scen = self.g.read("scenario.toml")
        texts = []
        for n, r in enumerate(self.recs):
            c = r.get("control")
            if isinstance(c, dict) and c.get("action") == "seat":
                sc = c.get("seat")
                if not isinstance(sc, dict) or set(sc) - {"time_zone"} != SEAT_KEYS or not isinstance(sc["before"], str):
                    raise Fail(rec_name(n), "control.seat", f"want the fields {', '.join(sorted(SEAT_KEYS))} (and time_zone)")
                texts.append((sc["before"].encode(), rec_name(n), "control.seat.before"))
        texts.append((self.gt, "game.toml", None))
        parsed = [toml_of(w, t) for t, w, _ in texts]
        self.setups = [setup_hash(t, scen) for t, _, _ in texts]
        if self.recs[0].get("setup") != self.setups[0]:
            if len(texts) == 1:
                raise Fail(rec_name(0), "setup", "is not the setup hash of game.toml and scenario.toml (were they rewritten?)")
            raise Fail(texts[0][1], texts[0][2], "is not the game.toml whose setup record 0 names")
        self.version, cur = [], 0
        for n, r in enumerate(self.recs):
            c = r.get("control")
            seat = c["seat"] if isinstance(c, dict) and c.get("action") == "seat" else None
            if n > 0 and ("setup" in r) != (seat is not None):
                raise Fail(rec_name(n), "setup", "only record 0 and a seat change carry a setup hash")
            if seat is not None:
                if r["setup"] != self.setups[cur + 1]:
                    why = ("names another setup than game.toml and scenario.toml (was game.toml changed without a seat record?)"
                           if cur + 2 == len(texts) else "is not the setup of the game.toml the next seat change keeps")
                    raise Fail(rec_name(n), "setup", why)
                want = copy.deepcopy(parsed[cur])
                hit = [x for x in want.get("seat", []) if x.get("role") == seat["role"]]
                if not hit:
                    raise Fail(rec_name(n), "control.seat.role", f"{seat['role']!r} is not a seat")
                hit[0]["email"], hit[0]["key"] = seat["email"], seat["key"]
                if "time_zone" in seat:
                    hit[0]["time_zone"] = seat["time_zone"]
                if want != parsed[cur + 1]:
                    raise Fail(texts[cur + 1][1], texts[cur + 1][2], f"differs from the game.toml before {rec_name(n)} in more than seat {seat['role']}'s email, key and time zone")
                cur += 1
            self.version.append(cur)
        seats = {}
        for v, t in enumerate(parsed):
            for i, x in enumerate(t.get("seat", [])):
                seats[f"{x.get('role')}@{v}"] = key_of(x.get("key"), texts[v][1], f"seat[{i}].key")
        self.g.write_allowed_signers(self.host, seats)
        self.seat_keys = seats
        # Steps: the records that stood while each was open; a receipt names one of them.
        self.spans, self.by_hash = {}, {}
        for n, r in enumerate(self.recs):
            self.by_hash[hashlib.sha256(self.bytes[n]).hexdigest()] = n
            op = r.get("opening")
            if isinstance(op, dict) and isinstance(op.get("step"), int):
                self.spans.setdefault(op["step"], [n, n])[1] = n

    # -- withheld orders and their reveals ---------------------------------------------------
    def collect_reveals(self):
        """{(step, role): (record n, index, reveal)}; each reveal names an order withheld in an
        earlier record, not yet revealed, in step and role order within its record."""
        self.reveals = {}
        withheld = {}
        for n, r in enumerate(self.recs):
            path = rec_name(n)
            rv = r.get("reveals", [])
            if "reveals" in r and not rv:
                raise Fail(path, "reveals", "an empty reveals list is written as no field")
            need(path, r, "reveals", list, nullable=True)
            prev_key = None
            for i, x in enumerate(rv):
                f = f"reveals[{i}]"
                if not isinstance(x, dict) or set(x) != REVEAL_KEYS:
                    raise Fail(path, f, f"want the fields {', '.join(sorted(REVEAL_KEYS))}")
                key = (need(path, x, "step", int, label=f + ".step"), need(path, x, "role", str, label=f + ".role"))
                if key not in withheld:
                    raise Fail(path, f, f"reveals the orders of {key[1]} in step {key[0]}, which no earlier record withheld")
                if key in self.reveals:
                    raise Fail(path, f, f"reveals the orders of {key[1]} in step {key[0]} a second time")
                if prev_key is not None and (key[0], key[1].encode()) <= (prev_key[0], prev_key[1].encode()):
                    raise Fail(path, f, "reveals are not in step and role order")
                if withheld[key][0] == "game-end" and r.get("outcome") is None:
                    raise Fail(path, f, f"reveals the orders of {key[1]} in step {key[0]}, withheld until the game's end, before it")
                prev_key = key
                self.reveals[key] = (n, i, x)
            res = r.get("resolution")
            if isinstance(res, dict) and isinstance(res.get("orders"), list):
                for o in res["orders"]:
                    if isinstance(o, dict) and o.get("withheld") is True:
                        withheld[(res.get("step"), o.get("role"))] = (o.get("withheld_until", "round-end"), o.get("seq") is None)
        over = self.recs[-1].get("outcome") is not None
        for (step, role), (until, nmr) in withheld.items():
            if (step, role) not in self.reveals:
                if over:
                    raise Fail(rec_name(self.last), "reveals", f"the game is over but the orders of {role} in step {step} are still withheld")
                what = "NMR orders" if nmr else "orders (text, signature, nonce, so the step seed)"
                self.notes.append(f"the {what} of {role} in step {step} are still withheld (until {until}): "
                                  "checked once a record reveals them")

    # -- record 0 and openings ---------------------------------------------------------------
    def check_opening(self, n, op, step):
        path = rec_name(n)
        if not isinstance(op, dict) or set(op) - {"paused"} != OPENING_KEYS:
            raise Fail(path, "opening", f"want the fields {', '.join(sorted(OPENING_KEYS))}")
        if op["step"] != step:
            raise Fail(path, "opening.step", f"{op['step']!r}: want {step}")
        asks = need(path, op, "asks", list, label="opening.asks")
        roles = []
        for i, a in enumerate(asks):
            role = need(path, a, "role", str, label=f"opening.asks[{i}].role")
            need(path, a, "kind", str, label=f"opening.asks[{i}].kind")
            if role not in self.seats:
                raise Fail(path, f"opening.asks[{i}].role", f"{role!r} is not a seat of game.toml")
            roles.append(role)
        if not roles or roles != sorted(set(roles), key=str.encode):
            raise Fail(path, "opening.asks", "asks are not one per role, sorted by role")
        hex32(path, "opening.host_seed_commitment", op["host_seed_commitment"])
        opened = parse_time(path, "opening.opened", op["opened"])
        parse_time(path, "opening.deadline", op["deadline"])
        hours = self.hours_for(a["kind"] for a in asks)
        want = stamp(opened + datetime.timedelta(hours=hours))
        if op["deadline"] != want:
            raise Fail(path, "opening.deadline", f"{op['deadline']} is not opening.opened ({op['opened']}) plus the "
                       f"{hours} hours game.toml gives the asks: want {want}")

    def check_record0(self):
        r, path = self.recs[0], rec_name(0)
        if r.get("resolution") is not None or "reveals" in r or "control" in r:
            raise Fail(path, "resolution", "record 0 resolves nothing")
        hex32(path, "state", r.get("state"))
        if r.get("opening") is None:
            raise Fail(path, "opening", "record 0 opens step 1")
        self.check_opening(0, r["opening"], 1)

    # -- records N >= 1 ----------------------------------------------------------------------
    def check_record(self, n, misses):
        r, path = self.recs[n], rec_name(n)
        op = self.recs[n - 1].get("opening")
        if op is None:
            raise Fail(path, None, f"follows {rec_name(n - 1)}, which opened no step (the game was over)")
        if r.get("control") is not None:
            return self.check_control(n, r, self.recs[n - 1], op)
        res = r.get("resolution")
        if not isinstance(res, dict) or set(res) != RESOLUTION_KEYS:
            raise Fail(path, "resolution", f"want the fields {', '.join(sorted(RESOLUTION_KEYS))}")
        step = res["step"]
        if step != op["step"] or step != self.next_step:
            raise Fail(path, "resolution.step", f"{step!r}: want step {self.next_step}, which {rec_name(n - 1)} holds open")
        if op.get("paused") is not None:
            raise Fail(path, "resolution", f"resolves step {step} while the host had paused the game (since {op['paused']}, {rec_name(n - 1)})")
        self.cur_step = step
        self.next_step = step + 1
        self.resolved += 1
        host_seed = hex32(path, "resolution.host_seed", res["host_seed"])
        if host_seed_commitment(self.id, step, host_seed) != op["host_seed_commitment"]:
            raise Fail(path, "resolution.host_seed", f"does not match the commitment {rec_name(n - 1)} published (opening.host_seed_commitment)")
        seed = hex32(path, "resolution.seed", res["seed"])
        nonces = self.check_orders(n, op, res, misses)
        if nonces is not None:
            if step_seed(self.id, step, host_seed, nonces) != res["seed"]:
                raise Fail(path, "resolution.seed", f"is not derived from the host seed and the nonces of step {step}")
            self.seeds += 1
        self.check_events(path, res, seed)
        self.check_times(n, op, res)
        hex32(path, "state", r.get("state"))
        if (r.get("opening") is None) == (r.get("outcome") is None):
            raise Fail(path, "opening", f"must either open step {step + 1} or state the outcome")
        if r.get("opening") is not None:
            self.check_opening(n, r["opening"], step + 1)
            if r["opening"]["opened"] != res["resolved"]:
                raise Fail(path, "opening.opened", f"differs from resolution.resolved ({res['resolved']}): the next step opens when this one is resolved")
        if "state_key" in r and (n != self.last or r.get("outcome") is None):
            raise Fail(path, "state_key", "revealed before the record that ends the game")

    def check_control(self, n, r, prev, op):
        """A host control record: no resolution, made no earlier than the record before, and its
        opening (or, abandoning, its outcome) exactly what the action does to the one before."""
        path, c = rec_name(n), r["control"]
        if not isinstance(c, dict) or not CONTROL_KEYS <= set(c) <= CONTROL_KEYS | {"seat", "orders"} or c["action"] not in ACTIONS:
            raise Fail(path, "control", f"want action ({', '.join(ACTIONS)}), at, reason and, for a seat change, seat, for a resignation or draw, orders")
        if ("orders" in c) != (c["action"] in ("resign", "draw")):
            raise Fail(path, "control.orders", "a resignation or a draw quotes the players' signed orders, and nothing else does")
        if not isinstance(c["reason"], str):
            raise Fail(path, "control.reason", "want text")
        if r.get("resolution") is not None:
            raise Fail(path, "resolution", "a host control record resolves no step")
        at = parse_time(path, "control.at", c["at"])
        before = prev.get("resolution") or {}
        pt = before.get("resolved") or (prev.get("control") or {}).get("at") or op["opened"]
        if at < parse_time(rec_name(n - 1), "time", pt):
            raise Fail(path, "control.at", f"{c['at']} is before {rec_name(n - 1)} ({pt}): times go backwards")
        if ("seat" in c) != (c["action"] == "seat"):
            raise Fail(path, "control.seat", "only a seat change names a seat")
        hex32(path, "state", r.get("state"))
        new, paused, action = r.get("opening"), op.get("paused"), c["action"]

        def same(want, what):
            if new != want:
                raise Fail(path, "opening", f"is not the opening of {rec_name(n - 1)} {what}")
        if paused is not None and action in ("deadline", "pause"):
            raise Fail(path, "control.action", f"{action} while the game is paused (since {paused})")
        if action == "seat":
            same(op, "(a seat change leaves it as it was)")
        elif action == "deadline":
            same(dict(op, deadline=new.get("deadline") if isinstance(new, dict) else None), "with a new deadline")
            if parse_time(path, "opening.deadline", new["deadline"]) <= at:
                raise Fail(path, "opening.deadline", "a moved deadline must lie after control.at")
            if parse_time(path, "opening.deadline", new["deadline"]) < parse_time(rec_name(n - 1), "opening.deadline", op["deadline"]):
                raise Fail(path, "opening.deadline", "a moved deadline may not be earlier than the one it replaces")
        elif action == "pause":
            same(dict(op, paused=c["at"]), "paused at control.at")
        elif action == "resume":
            if paused is None:
                raise Fail(path, "control.action", "resumes a game that was not paused")
            gone = max(at - parse_time(rec_name(n - 1), "opening.paused", paused), datetime.timedelta(0))
            want = {k: v for k, v in op.items() if k != "paused"}
            want["deadline"] = stamp(parse_time(rec_name(n - 1), "opening.deadline", op["deadline"]) + gone)
            same(want, "resumed, its deadline later by the time paused")
        elif action in ("resign", "draw"):
            if new is not None or r.get("outcome") is None or c["reason"] != "":
                raise Fail(path, "outcome", "a game its players end has no opening, an outcome, and no host's reason")
            self.check_players_end(n, r, op, c)
        else:
            summary = f"The host ended the game without a result: {c['reason']}"
            if new is not None or r.get("outcome") != {"winner": None, "summary": summary} or not c["reason"].strip():
                raise Fail(path, "outcome", "an abandoned game ends with no opening and the outcome naming the host's reason")
        if action not in ENDS and (r.get("outcome") is not None or "reveals" in r):
            raise Fail(path, "outcome", "only a record that ends the game states an outcome or reveals orders")
        if "state_key" in r and (n != self.last or r.get("outcome") is None):
            raise Fail(path, "state_key", "revealed before the record that ends the game")

    def check_players_end(self, n, r, op, c):
        """A resignation or a draw (SPEC.md "Ending by the players"): every quoted order has its
        receipt (its commitment), its seat's signature under the key in force for that receipt, asks
        for this end, and is its role's newest order; a resignation is of the open step, a draw
        quotes every seat; the outcome is the one that follows (for a resignation, as far as it can
        be told without the rules: the resigning side does not win)."""
        path, action, orders = rec_name(n), c["action"], c["orders"]
        if not isinstance(orders, list) or not orders or not all(isinstance(o, dict) and set(o) == SIGNED_KEYS for o in orders):
            raise Fail(path, "control.orders", f"want a list of orders, each with {', '.join(sorted(SIGNED_KEYS))}")
        roles, quoted = sorted(self.seats), [o["role"] for o in orders]
        if action == "draw" and quoted != roles:
            raise Fail(path, "control.orders", f"a draw quotes every seat's order ({', '.join(roles)}), this one {', '.join(map(str, quoted))}")
        if action == "resign" and (len(orders) != 1 or orders[0]["step"] != op["step"]):
            raise Fail(path, "control.orders", f"a resignation quotes one order of the open step {op['step']}")
        for i, o in enumerate(orders):
            sf, step, role, seq = f"control.orders[{i}]", o["step"], o["role"], o["seq"]
            rc = self.receipts.get(step, {}).get(role, {}).get(seq)
            if rc is None:
                raise Fail(path, sf, f"names {receipt_name(step, role, seq)}, which is not among the receipts")
            newest = max(((s, max(rs[role])) for s, rs in self.receipts.items() if s <= op["step"] and rs.get(role)), default=None)
            if newest != (step, seq):
                raise Fail(path, sf, f"is not the newest order of {role} (that is {receipt_name(newest[0], role, newest[1]) if newest else 'none'})")
            version = self.version[self.by_hash.get(rc["record"], n - 1)]
            data = o["text"].encode()
            self.g.verify_sig(f"seat:{role}@{version}", "pbem-orders", data, o["signature"], path, sf + ".signature")
            if action == "draw" and self.wording > 0 and self.version[n - 1] != version:
                # A game that carries its report wording counts only offers signed with the key
                # the seat holds when the draw is made: a seat change withdrew the earlier one's.
                try:
                    self.g.verify_sig(f"seat:{role}@{self.version[n - 1]}", "pbem-orders", data, o["signature"], path, sf + ".signature")
                except Fail:
                    raise Fail(path, sf + ".signature", f"a draw offer signed with a key seat {role} no longer held when the draw was made (a seat change withdrew it)")
            if order_commitment(self.id, step, role, data) != rc["commitment"]:
                raise Fail(path, sf + ".text", f"is not the order {receipt_name(step, role, seq)} was issued for")
            try:
                t = tomllib.loads(order_toml(o["text"]))
            except tomllib.TOMLDecodeError as e:
                raise Fail(path, sf + ".text", f"not TOML: {e}")
            h = t.get("pbem") if isinstance(t.get("pbem"), dict) else {}
            if (h.get("game"), h.get("step"), h.get("role")) != (self.id, step, role):
                raise Fail(path, sf + ".text", "its [pbem] header names another game, step or role")
            if (t.get("orders") or {}).get(action) is not True:
                raise Fail(path, sf + ".text", f"the order of {role} does not say `{action} = true`")
            if rc["nonce"] != (h.get("nonce", "") != ""):
                raise Fail(receipt_name(step, role, seq), "nonce", f"says {str(rc['nonce']).lower()}, but the order it receipts has {'a' if h.get('nonce') else 'no'} nonce")
        outcome = r["outcome"]
        if action == "draw":
            want = {"winner": None, "summary": f"Drawn: every seat agreed a draw ({', '.join(roles)})."}
            if outcome != want:
                raise Fail(path, "outcome", f"is not the outcome of an agreed draw ({want['summary']})")
            return
        role = orders[0]["role"]
        m = re.match(r"^" + re.escape(role) + r"(?: \(side ([^)]+)\))? resigned: (.+)\.$", str(outcome.get("summary")))
        winner = outcome.get("winner")
        tail = m and m.group(2)
        side = m and (m.group(1) or role)
        ok = m and set(outcome) == {"winner", "summary"} and (
            (winner is None and tail in ("the game is lost", "the game ends without a winner"))
            or (isinstance(winner, str) and winner != side and tail == f"{winner} wins"))
        if not ok:
            raise Fail(path, "outcome", f"is not the outcome of {role}'s resignation (its side loses)")

    def check_events(self, path, res, seed):
        """The i-th roll or draw logged is the i-th draw from the step seed: value = below(sides) + 1
        (SPEC.md "Dice": every draw of a step is a public event with a roll, in draw order)."""
        events = need(path, res, "events", list, label="resolution.events")
        stream = Stream(seed)
        for i, e in enumerate(events):
            f = f"resolution.events[{i}]"
            if not isinstance(e, dict) or not isinstance(e.get("text"), str) or set(e) - {"text", "roll"}:
                raise Fail(path, f, "an event is {text} or {roll, text} (events for some roles only are not public)")
            if "roll" not in e:
                continue
            roll = e["roll"]
            if not isinstance(roll, dict) or set(roll) != {"sides", "value"}:
                raise Fail(path, f + ".roll", "want {sides, value}")
            sides = need(path, roll, "sides", int, label=f + ".roll.sides")
            value = need(path, roll, "value", int, label=f + ".roll.value")
            if not 1 <= sides <= MASK:
                raise Fail(path, f + ".roll.sides", f"{sides} is not a number of faces")
            want = stream.below(sides) + 1
            if value != want:
                raise Fail(path, f + ".roll.value", f"{value} is not draw {self.rolls_in(events, i)} of the step seed's stream: "
                           f"a d{sides} there gives {want}")
            self.rolls += 1

    @staticmethod
    def rolls_in(events, i):
        return sum(1 for e in events[: i + 1] if isinstance(e, dict) and "roll" in e)

    def check_times(self, n, op, res):
        path = rec_name(n)
        opened = parse_time(rec_name(n - 1), "opening.opened", op["opened"])
        resolved = parse_time(path, "resolution.resolved", res["resolved"])
        if resolved < opened:
            raise Fail(path, "resolution.resolved", f"is before step {res['step']} opened ({op['opened']}): times go backwards")
        nmr = [o["role"] for o in res["orders"] if o.get("seq") is None]
        if nmr:
            if self.policy == "wait":
                raise Fail(path, "resolution.orders", f"{nmr[0]} is NMR but the game's NMR policy is wait (game.toml [nmr])")
            due = parse_time(rec_name(n - 1), "opening.deadline", op["deadline"]) + datetime.timedelta(hours=self.grace_hours)
            if resolved < due:
                raise Fail(path, "resolution.resolved", f"{nmr[0]} is NMR, resolved before the deadline {op['deadline']} "
                           f"plus {self.grace_hours} grace hour(s) ({stamp(due)})")
        self.times[res["step"]] = (opened, resolved)

    # -- orders --------------------------------------------------------------------------------
    def check_orders(self, n, op, res, misses):
        """Every asked role's order; returns {role: nonce} for the step seed, or None while a
        withheld order's nonce is not public yet."""
        path = rec_name(n)
        orders = need(path, res, "orders", list, label="resolution.orders")
        asked = [a["role"] for a in op["asks"]]
        roles = [o.get("role") if isinstance(o, dict) else None for o in orders]
        if roles != asked:
            raise Fail(path, "resolution.orders", f"roles {roles} are not the roles step {self.cur_step} asked, in order ({asked})")
        latest = {role: max(v) for role, v in self.receipts.get(self.cur_step, {}).items()}
        nonces = {}
        for i, o in enumerate(orders):
            f = f"resolution.orders[{i}]"
            role = o["role"]
            if set(o) - ORDER_KEYS:
                raise Fail(path, f, f"unknown field {sorted(set(o) - ORDER_KEYS)[0]}")
            withheld = o.get("withheld", False)
            if "withheld" in o and withheld is not True:
                raise Fail(path, f + ".withheld", "is written only when true")
            if "withheld_until" in o and (not withheld or o["withheld_until"] != "game-end"):
                raise Fail(path, f + ".withheld_until", "is written only as \"game-end\" on a withheld order")
            seq = o.get("seq")
            if seq is None:
                nonces[role] = self.check_nmr(n, i, o, role, latest, misses)
            else:
                nonce = self.check_submitted(n, i, o, role, latest, op, withheld)
                if nonce is not None:
                    nonces[role] = nonce
            misses[role] = misses.get(role, 0) + 1 if seq is None else 0
        return nonces if len(nonces) == len(orders) else None

    def check_nmr(self, n, i, o, role, latest, misses):
        path, f = rec_name(n), f"resolution.orders[{i}]"
        for k in ("commitment", "text", "signature"):
            if o.get(k) is not None:
                raise Fail(path, f"{f}.{k}", f"an NMR order has no {k}")
        want = "bot" if self.policy == "bot" and misses.get(role, 0) >= self.bot_after else "default"
        if o.get("nmr") != want:
            raise Fail(path, f + ".nmr", f"{o.get('nmr')!r}: {role} had missed {misses.get(role, 0)} step(s) in a row "
                       f"under NMR policy {self.policy} (bot_after {self.bot_after}): want {want!r}")
        if role in latest:
            raise Fail(receipt_name(self.cur_step, role, latest[role]), None, f"{role} is NMR in {path} but has a receipt for step {self.cur_step}")
        need(path, o, "orders", dict, label=f + ".orders")
        self.nmr += 1
        return bytes(32)

    def note_key_change(self, n, step, role, seq):
        """A note when the order used (receipt `seq`) was signed under another key of the seat than
        an earlier receipt of the role in the step: the host changed the seat's key while the step
        was open. Legitimate when the player changed keys; otherwise a substituted order (a player's
        kept receipt says which: `pbem audit --receipt`)."""
        key = lambda r: self.seat_keys.get(f"{role}@{self.version[self.by_hash.get(r['record'], n - 1)]}")
        rs = self.receipts[step][role]
        other = [s for s in sorted(rs) if s < seq and key(rs[s]) != key(rs[seq])]
        if other:
            self.notes.append(f"the order of {role} used in step {step} (receipt {seq}) was signed under another key of the seat "
                              f"than its receipt(s) {', '.join(map(str, other))}: the host changed {role}'s key while the step was open")

    def check_submitted(self, n, i, o, role, latest, op, withheld):
        path, f = rec_name(n), f"resolution.orders[{i}]"
        seq = need(path, o, "seq", int, label=f + ".seq")
        c = hex32(path, f + ".commitment", o.get("commitment")).hex()
        if "nmr" in o:
            raise Fail(path, f + ".nmr", "a submitted order is not NMR")
        step = self.cur_step
        rp = receipt_name(step, role, seq)
        if seq not in self.receipts.get(step, {}).get(role, {}):
            raise Fail(rp, None, f"missing: the receipt of the order of {role} that {path} used")
        rc = self.receipts[step][role][seq]
        if rc["commitment"] != c:
            raise Fail(rp, "commitment", f"does not match the order of {role} in {path}")
        if latest[role] != seq:
            raise Fail(receipt_name(step, role, latest[role]), None, f"a newer receipt than the order {path} used: the newest order should have been used")
        self.note_key_change(n, step, role, seq)
        if withheld:
            for k in ("text", "signature"):
                if o.get(k) is not None:
                    raise Fail(path, f"{f}.{k}", "a withheld order's text is not in its record")
            if o.get("orders") != {}:
                raise Fail(path, f + ".orders", "a withheld order's orders are not in its record")
            if (step, role) not in self.reveals:
                return None
            rn, ri, x = self.reveals[(step, role)]
            src, sf = rec_name(rn), f"reveals[{ri}]"
            text, signature, orders = x["text"], x["signature"], x["orders"]
        else:
            src, sf = path, f
            text, signature, orders = o.get("text"), o.get("signature"), o.get("orders")
        if not isinstance(text, str) or not isinstance(signature, str) or not isinstance(orders, dict):
            raise Fail(src, sf + ".text", "a submitted order's text, signature and orders are revealed")
        return self.check_text(n, role, c, text, signature, orders, op, src, sf, rc)

    def check_text(self, n, role, c, text, signature, orders, op, src, sf, rc):
        """A revealed order: its seat's signature, its commitment, its [pbem] header, its [orders]."""
        # Signed with the seat key in force when the receipt was issued (after the record it names).
        step, version = self.cur_step, self.version[self.by_hash.get(rc["record"], n - 1)]
        data = text.encode()
        self.g.verify_sig(f"seat:{role}@{version}", "pbem-orders", data, signature, src, sf + ".signature")
        if order_commitment(self.id, step, role, data) != c:
            raise Fail(src, sf + ".text", f"the revealed order of {role} in step {step} does not match its commitment")
        try:
            t = tomllib.loads(order_toml(text))
        except tomllib.TOMLDecodeError as e:
            raise Fail(src, sf + ".text", f"the order of {role} is not TOML: {e}")
        h = t.get("pbem")
        if not isinstance(h, dict) or not set(h) - {"nonce"} == HEADER_KEYS - {"nonce"}:
            raise Fail(src, sf + ".text", f"the order of {role} has no [pbem] header of {', '.join(sorted(HEADER_KEYS))}")
        h.setdefault("nonce", "")
        if not isinstance(h["nonce"], str):
            raise Fail(src, sf + ".text", "pbem.nonce is not a string")
        if (h["game"], h["step"], h["role"], h["host_seed_commitment"]) != (self.id, step, role, op["host_seed_commitment"]):
            raise Fail(src, sf + ".text", f"the order of {role} names another game, step, role or host-seed commitment")
        if {k: v for k, v in t.get("orders", {}).items() if k not in ENDING_KEYS} != orders:
            raise Fail(src, sf + ".orders", f"the orders of {role} differ from its signed text's [orders]")
        if h["nonce"] == "":
            nonce = bytes(32)
        else:
            # As pbem reads it: surrounding white space ignored, either case.
            digits = h["nonce"].strip()
            nonce = bytes.fromhex(digits) if re.match(r"^[0-9a-fA-F]{64}$", digits) else None
            if nonce is None:
                raise Fail(src, sf + ".text", "pbem.nonce is not 64 hex digits or empty")
            if nonce == bytes(32):
                raise Fail(src, sf + ".text", f"the order of {role} in step {step} has a nonce of zeros")
            who = f"{role} in step {step}"
            if self.nonces.setdefault(nonce, who) != who:
                raise Fail(src, sf + ".text", f"the order of {who} reuses the nonce of the order of {self.nonces[nonce]} (a replayed order?)")
        if rc["nonce"] != (h["nonce"] != ""):
            raise Fail(receipt_name(step, role, rc["seq"]), "nonce", f"says {str(rc['nonce']).lower()}, but the order it receipts has {'a' if h['nonce'] else 'no'} nonce")
        self.orders += 1
        return nonce


def receipt_name(step, role, seq):
    return f"receipts/{step:06d}/{role}-{seq}.toml"


def load_receipts(ck):
    """Every receipt: host-signed, for this game, its step and role, numbered 1, 2, ... per role
    and step (superseded ones included), no commitment twice, naming a record that stood while
    its step was open and the setup in force after it; only for steps a record opened. Fills ck.receipts."""
    open_step = max(ck.spans, default=0)
    ck.receipts, ck.deferred, count = {}, [], 0
    for d in ck.g.listdir("receipts") or []:
        # A name of digits is a step's folder; any other file (notes) is no part of the game.
        if not re.fullmatch(r"[0-9]+", d):
            continue
        if not re.fullmatch(r"[0-9]{6}", d) or not 1 <= int(d) <= open_step:
            raise Fail(f"receipts/{d}", None, f"receipts for a step no record opened (the last step opened is {open_step})")
        if ck.g.listdir(f"receipts/{d}") is None:
            raise Fail(f"receipts/{d}", None, "not a folder of receipts")
        step = int(d)
        span = ck.spans.get(step)
        if span is None:
            raise Fail(f"receipts/{d}", None, f"receipts for step {step}, which no record opened")
        opening = ck.recs[span[0]].get("opening") or {}
        asked = [a.get("role") for a in opening.get("asks", []) if isinstance(a, dict)]
        by_role = {}
        for name in ck.g.listdir(f"receipts/{d}"):
            # Every ROLE-K.toml is a receipt (its .sig is read with it); another .toml is a
            # receipt out of place; any other file (notes, a .sig alone) is no part of the game.
            if not name.endswith(".toml"):
                continue
            m = RECEIPT_NAME.fullmatch(name)
            if not m:
                raise Fail(f"receipts/{d}/{name}", None, "not a receipt file (ROLE-K.toml and ROLE-K.toml.sig)")
            by_role.setdefault(m.group(1), []).append(int(m.group(2)))
        for role in sorted(by_role):
            for k, seq in enumerate(sorted(by_role[role]), start=1):
                path = receipt_name(step, role, seq)
                if seq != k or f"{role}-{seq}.toml" not in os.listdir(os.path.join(ck.g.root, "receipts", d)):
                    raise Fail(path, "seq", f"receipt out of place: want {role}-{k}.toml (numbered 1, 2, ... per role)")
                b = ck.g.read(path)
                if not ck.g.exists(path + ".sig"):
                    raise Fail(path + ".sig", None, "missing: every receipt is host-signed")
                ck.g.verify_sig("host", "pbem-receipt", b, ck.g.read(path + ".sig"), path + ".sig", None)
                r = toml_of(path, b)
                if set(r) != RECEIPT_KEYS:
                    raise Fail(path, None, f"want the fields {', '.join(sorted(RECEIPT_KEYS))}")
                for field, want in (("game", ck.id), ("step", step), ("role", role), ("seq", seq)):
                    if r[field] != want:
                        raise Fail(path, field, f"{r[field]!r}: receipt out of place, want {want!r}")
                # A seat may resign or offer a draw at any open step, asked or not.
                if role not in asked and role not in ck.seats:
                    raise Fail(path, "role", f"{role} was not asked in step {step} and is no seat")
                hex32(path, "commitment", r["commitment"])
                if any(x["commitment"] == r["commitment"] for x in ck.receipts.get(step, {}).get(role, {}).values()):
                    raise Fail(path, "commitment", "the same order accepted twice (a superseded order brought back?)")
                if not isinstance(r["nonce"], bool):
                    raise Fail(path, "nonce", "want true or false")
                # Checked after the records (so that an edited record or game.toml is reported by
                # the checks of the record itself).
                # A receipt names a record that stood while its step was open, and the setup in
                # force after it.
                k = ck.by_hash.get(r["record"])
                if r["setup"] not in {ck.setups[ck.version[i]] for i in range(span[0], span[1] + 1)}:
                    ck.deferred.append(Fail(path, "setup", "names another setup than game.toml and scenario.toml (were they rewritten?)"))
                elif k is None or not span[0] <= k <= span[1]:
                    ck.deferred.append(Fail(path, "record", f"is not the SHA-256 of a record that stood while step {step} was open "
                                              f"({rec_name(span[0])} to {rec_name(span[1])}): was the history rewritten?"))
                elif r["setup"] != ck.setups[ck.version[k]]:
                    ck.deferred.append(Fail(path, "setup", f"is not the setup in force after {rec_name(k)}, the record it names"))
                parse_time(path, "received", r["received"])
                ck.receipts.setdefault(step, {}).setdefault(role, {})[seq] = r
                count += 1
    return count


def check_receipt_times(ck):
    """Every receipt was issued while its step was open: not before `opened`, not after `resolved`."""
    for step, roles in sorted(ck.receipts.items()):
        first = ck.spans[step][0]
        op = ck.recs[first]["opening"]
        opened = parse_time(rec_name(first), "opening.opened", op["opened"])
        resolved = ck.times.get(step, (None, None))[1]
        for role, seqs in sorted(roles.items()):
            for seq, r in sorted(seqs.items()):
                t = parse_time(receipt_name(step, role, seq), "received", r["received"])
                if t < opened:
                    raise Fail(receipt_name(step, role, seq), "received", f"{r['received']} is before step {step} opened ({op['opened']})")
                if resolved is not None and t > resolved:
                    raise Fail(receipt_name(step, role, seq), "received", f"{r['received']} is after step {step} was resolved "
                               f"({stamp(resolved)}): an order accepted too late")


def check_states(ck):
    """Once the last record ends the game and reveals `state_key`, every record's state commitment
    against states/NNNNNN.json (when the copy holds states/)."""
    names = ck.g.listdir("states")
    for name in names or []:
        # As in records/: a file not named like a state is no part of the game.
        if not name.endswith(".json"):
            continue
        m = re.fullmatch(r"([0-9]{6})\.json", name)
        if not m or int(m.group(1)) > ck.last:
            raise Fail(f"states/{name}", None, f"no record {name[:6]} (the last record is {ck.last}): a history cut short?")
    final = ck.recs[-1]
    if final.get("outcome") is None:
        return "state commitments: not checkable yet (the key is revealed by the record that ends the game)"
    if "state_key" not in final:
        raise Fail(rec_name(ck.last), "state_key", "the record that ends the game reveals the state key")
    key = hex32(rec_name(ck.last), "state_key", final["state_key"])
    if names is None:
        return "state commitments: not checked (this copy has no states/)"
    for n, r in enumerate(ck.recs):
        sp = f"states/{n:06d}.json"
        if state_commitment(ck.id, n, key, ck.g.read(sp)) != r["state"]:
            raise Fail(rec_name(n), "state", f"is not the commitment to {sp} under the revealed state_key")
    return f"state commitments: all {len(ck.recs)} match states/ under the revealed key"


def run(root):
    """Checks the game folder `root`; returns the summary lines, or raises Fail."""
    with tempfile.TemporaryDirectory(prefix="pbem-verify-") as tmp:
        ck = Checker(Game(root, tmp))
        ck.load_game()
        ck.load_records()
        ck.follow_setup()
        ck.collect_reveals()
        receipts = load_receipts(ck)
        ck.check_record0()
        ck.times, misses = {}, {}
        ck.next_step, ck.resolved = 1, 0
        for n in range(1, ck.last + 1):
            ck.check_record(n, misses)
        check_receipt_times(ck)
        if ck.deferred:
            raise ck.deferred[0]
        states = check_states(ck)
        final = ck.recs[-1]
        if final.get("outcome") is not None:
            out = final["outcome"]
            winner = out.get("winner") if isinstance(out, dict) else None
            status = (f"is over; the host's signed record says: {out.get('summary', out) if isinstance(out, dict) else out}"
                      f" (winner: {winner if winner is not None else 'none'}; not replayed here)")
        else:
            status = f"goes on: step {final['opening']['step']} open until {final['opening']['deadline']}"
        lines = [
            f"game {ck.id}: {ck.last + 1} records (hash chain and host signatures), {receipts} receipts, "
            f"{ck.orders} signed orders, {ck.nmr} NMR, {ck.seeds} of {ck.resolved} step seeds, {ck.rolls} rolls and draws "
            f"re-derived; {ck.g.sig_count} signatures verified by ssh-keygen",
            states,
            f"the game {status}",
        ]
        lines += [f"note: {x}" for x in ck.notes]
        lines.append("not checked here (needs the game's rules; run `pbem audit`): the outcome and winner of a game played "
                     "to its end (shown as the host signed them, not replayed), legality of orders, default and built-in "
                     "players' orders, the events' texts, when withheld orders fall due, the side of a seat that resigned")
        return lines


# ---------------------------------------------------------------------------------------------
# A public copy as one tar archive (`pbem public`)
# ---------------------------------------------------------------------------------------------

# As pbem's own limits for an archive (src/public.rs): a tar bomb is refused.
MAX_UNPACKED_BYTES = 1 << 30
MAX_ENTRIES = 1_000_000


class BadArchive(Exception):
    """An archive that cannot be read as a public copy: the verifier cannot run on it (exit 2)."""


def archive_parts(m):
    """The parts of member `m`'s path (`GAME/records/000003.json`), or BadArchive for what a
    public copy never holds: a link or any other non-plain file, an absolute or `..` path."""
    if not (m.isfile() or m.isdir()):
        raise BadArchive(f"{m.name}: not a plain file or folder (a public copy holds no links or devices)")
    if m.name.startswith("/"):
        raise BadArchive(f"{m.name}: an absolute path (a public copy holds one game folder)")
    parts = [p for p in m.name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise BadArchive(f"{m.name}: a path with `..` (a public copy holds one game folder)")
    return parts


def public_file(parts):
    """True for the path of a file a public copy holds, inside its game folder (SPEC.md and README
    "The public web site": what `pbem public` writes): game.toml, scenario.toml,
    records/NNNNNN.json, receipts/NNNNNN/ROLE-K.toml, each record and receipt with its .sig."""
    if parts in (["game.toml"], ["scenario.toml"]):
        return True
    if len(parts) == 2 and parts[0] == "records":
        return RECORD_NAME.fullmatch(parts[1]) is not None
    return (len(parts) == 3 and parts[0] == "receipts" and re.fullmatch(r"[0-9]{6}", parts[1]) is not None
            and RECEIPT_NAME.fullmatch(parts[2]) is not None)


def unpack_public_copy(archive, into):
    """Unpacks the tar archive `archive` into the folder `into` (each file written anew by this
    code, never by tarfile's extraction) and returns the name of its one game folder. Raises
    BadArchive for an archive that is no tar, an unsafe member (`archive_parts`), a file outside
    one folder or not of a public copy (`public_file`: `pbem audit` refuses such an archive too,
    say one holding `GAME/host/host_key`), a member twice, or more than MAX_UNPACKED_BYTES or
    MAX_ENTRIES. Folder entries are only checked for safety: the files make their folders."""
    game, seen, total, count = None, set(), 0, 0
    try:
        with tarfile.open(archive, mode="r:") as tf:
            for m in tf:
                count += 1
                parts = archive_parts(m)
                if count > MAX_ENTRIES:
                    raise BadArchive(f"larger than a public copy may be ({MAX_UNPACKED_BYTES} bytes, {MAX_ENTRIES} files)")
                if not parts or m.isdir():
                    continue
                if game is None:
                    game = parts[0]
                if parts[0] != game:
                    raise BadArchive(f"{m.name}: outside the game folder {game}/ (a public copy holds one folder)")
                # As pbem reads a member's path: a game folder is not hidden, and a path does not start with `./`.
                if game.startswith(".") or m.name.startswith("./") or not public_file(parts[1:]):
                    raise BadArchive(f"{m.name}: not a file of a public copy (GAME/game.toml, GAME/scenario.toml, "
                                     "GAME/records/NNNNNN.json, GAME/receipts/NNNNNN/ROLE-K.toml, each with its .sig)")
                total += max(m.size, 0)
                if total > MAX_UNPACKED_BYTES:
                    raise BadArchive(f"larger than a public copy may be ({MAX_UNPACKED_BYTES} bytes, {MAX_ENTRIES} files)")
                dest = os.path.join(into, *parts)
                if "/".join(parts) in seen:
                    raise BadArchive(f"{m.name}: twice in the archive")
                seen.add("/".join(parts))
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with open(dest, "xb") as out:
                    out.write(tf.extractfile(m).read())
    except (tarfile.TarError, EOFError) as e:
        raise BadArchive(f"not a tar archive, or a damaged one ({e})")
    except OSError as e:
        raise BadArchive(f"cannot unpack: {e.strerror or e}")
    if game is None:
        raise BadArchive("holds no game folder")
    return game


def check(root, shown):
    """Checks the game folder `root` and prints the outcome, naming files under `shown` (the
    folder itself, or `GAME.tar:GAME` for an unpacked archive); returns the exit status."""
    game_toml = os.path.join(root, "game.toml")
    if os.path.lexists(game_toml) and not os.path.isfile(game_toml):
        # A FIFO, a folder or a link to a device is there (tester21 T21a-4): said as pbem says it.
        print(f"FAIL: {os.path.join(shown, 'game.toml')}: not a regular file (a FIFO, a device or a folder); not read")
        return 1
    if not os.path.isfile(game_toml):
        print(f"FAIL: {os.path.join(shown, 'game.toml')}: missing (not a game folder?)")
        return 1
    try:
        lines = run(root)
    except CannotRun as e:
        print(f"pbem_verify: {e}", file=sys.stderr)
        return 2
    except Fail as e:
        field = f"{e.field}: " if e.field else ""
        print(f"FAIL: {os.path.join(shown, e.path)}: {field}{e.what}")
        return 1
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        # A shape no check above foresaw: still a failure of the game's files, not a crash.
        print(f"FAIL: {shown}: malformed game files ({type(e).__name__}: {e})")
        return 1
    print("verified: " + lines[0])
    for line in lines[1:]:
        print("  " + line)
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        self_test()
        print("self-test passed: RFC 8439 ChaCha20 vectors, SPEC.md hash and dice vectors")
        return 0
    if len(argv) != 2 or argv[1].startswith("-"):
        print("usage: pbem_verify.py GAME_DIR | GAME.tar | --self-test", file=sys.stderr)
        return 2
    if shutil.which("ssh-keygen") is None:
        print("pbem_verify: ssh-keygen (OpenSSH 8.2 or later) is needed to check signatures", file=sys.stderr)
        return 2
    try:
        self_test()
    except AssertionError as e:
        print(f"pbem_verify: self-test failed ({e}): this Python cannot check games", file=sys.stderr)
        return 2
    target = argv[1]
    if not os.path.lexists(target):
        # Nothing to check: the verifier cannot run, not a game that failed (tester21 T21b-7).
        print(f"pbem_verify: {target}: no such file or folder", file=sys.stderr)
        return 2
    if not os.path.isfile(target) and not os.path.isdir(target):
        # A FIFO or a device is neither (tester22 T22a-5), as pbem audit says.
        print(f"pbem_verify: {target}: neither a game folder nor a public copy (a FIFO or a device); not read", file=sys.stderr)
        return 2
    if not os.path.isfile(target):
        return check(target, target)
    with tempfile.TemporaryDirectory(prefix="pbem-verify-copy-") as tmp:
        try:
            game = unpack_public_copy(target, tmp)
        except BadArchive as e:
            print(f"pbem_verify: {target}: {e}", file=sys.stderr)
            return 2
        return check(os.path.join(tmp, game), f"{target}:{game}")


def _stop(signum, _frame):
    """A run stopped by SIGTERM or SIGHUP (`timeout`, a closed terminal) exits as Python does on
    Ctrl-C, so its temporary folder is removed on the way out."""
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _stop)
    sys.exit(main(sys.argv))
