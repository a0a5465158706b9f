'use strict';
/*
 * interop.js - outboxd's C Stellar layer against the official JS SDK
 * (@stellar/stellar-base 15), both directions, over random transactions.
 *
 *   node interop.js --gen <interop_gen> --ctl <outboxctl>
 *
 * (a) C -> SDK: interop_gen builds and signs N transactions in C and prints,
 *     per transaction, the envelope, C's hash and the fields it intended. The
 *     SDK decodes each envelope; every field must equal the intended one, the
 *     SDK must re-encode it to the same bytes, its hash (and inner hash for fee
 *     bumps) must equal C's, and every signature must verify in the SDK with
 *     the expected signer's hint.
 * (b) SDK -> C: the SDK builds and signs N random transactions (multi-op
 *     payments with any asset and memo, contract calls with many ScVal kinds,
 *     footprints and auth entries, V2 preconditions, fee bumps, extra
 *     signatures), and
 *     `outboxctl tx decode` must report the same fields, signatures and hashes.
 *
 * N = OUTBOX_INTEROP_COUNT (default 1000) per direction; the seed of (a) is
 * printed and OUTBOX_INTEROP_SEED replays it. Each direction first checks
 * that its comparison does catch a tampered field, so the test can fail.
 * Exit status 0 only when every transaction matches.
 */
const path = require('path');
const crypto = require('crypto');
const assert = require('assert');
const { execFileSync, spawnSync } = require('child_process');

let sdk;
try {
	sdk = require(path.join(__dirname, 'node_modules', '@stellar', 'stellar-base'));
} catch (e) {
	console.error('interop: @stellar/stellar-base is not installed in tests/interop ' +
		'(ops/lib/prepare.d/interop.sh installs it): ' + e.message);
	process.exit(1);
}
const {
	TransactionBuilder, FeeBumpTransaction, Transaction, Keypair, StrKey, Account, MuxedAccount,
	Operation, Asset, Memo, Address, SorobanDataBuilder, xdr, encodeMuxedAccountToAddress,
	extractBaseAddress,
} = sdk;

function arg(name) {
	const i = process.argv.indexOf(name);
	if (i < 0 || i + 1 >= process.argv.length) {
		console.error(`usage: node interop.js --gen <interop_gen> --ctl <outboxctl> (missing ${name})`);
		process.exit(2);
	}
	return process.argv[i + 1];
}

const GEN = arg('--gen');
const CTL = arg('--ctl');
const COUNT = parseInt(process.env.OUTBOX_INTEROP_COUNT || '1000', 10);
const SEED = process.env.OUTBOX_INTEROP_SEED || String(crypto.randomInt(1, 2 ** 47));
const hex = (b) => Buffer.from(b).toString('hex');
const bytes = (x) => (typeof x === 'string' ? Buffer.from(x, 'utf8') : Buffer.from(x));

/* ---------- canonical views (the one format all three producers map to) ---------- */

function scvalView(v) {
	switch (v.switch().name) {
	case 'scvBool': return { type: 'bool', value: v.b() };
	case 'scvVoid': return { type: 'void', value: null };
	case 'scvU32': return { type: 'u32', value: v.u32() };
	case 'scvI32': return { type: 'i32', value: v.i32() };
	case 'scvU64': return { type: 'u64', value: v.u64().toString() };
	case 'scvI64': return { type: 'i64', value: v.i64().toString() };
	case 'scvU128': {
		const p = v.u128();
		return { type: 'u128', value: ((BigInt(p.hi().toString()) << 64n) + BigInt(p.lo().toString())).toString() };
	}
	case 'scvI128': {
		const p = v.i128();
		return { type: 'i128', value: ((BigInt(p.hi().toString()) << 64n) + BigInt(p.lo().toString())).toString() };
	}
	case 'scvBytes': return { type: 'bytes', value: hex(v.bytes()) };
	case 'scvString': return { type: 'string', value: hex(bytes(v.str())) };
	case 'scvSymbol': return { type: 'symbol', value: bytes(v.sym()).toString('latin1') };
	case 'scvAddress': return { type: 'address', value: Address.fromScAddress(v.address()).toString() };
	default: throw new Error('unexpected ScVal arm ' + v.switch().name);
	}
}

function assetView(a) {
	const n = a.switch().name;
	if (n === 'assetTypeNative') return 'native';
	const x = n === 'assetTypeCreditAlphanum4' ? a.alphaNum4() : a.alphaNum12();
	const code = bytes(x.assetCode()).toString('latin1').replace(/\0+$/, '');
	return code + ':' + StrKey.encodeEd25519PublicKey(x.issuer().ed25519());
}

function opView(op) {
	const src = op.sourceAccount() ? encodeMuxedAccountToAddress(op.sourceAccount()) : null;
	const body = op.body();
	switch (body.switch().name) {
	case 'payment': {
		const p = body.paymentOp();
		return {
			source: src, type: 'payment', destination: encodeMuxedAccountToAddress(p.destination()),
			asset: assetView(p.asset()), amount: p.amount().toString(),
		};
	}
	case 'invokeHostFunction': {
		const ih = body.invokeHostFunctionOp();
		const ic = ih.hostFunction().invokeContract();
		return {
			source: src, type: 'invoke_host_function',
			contract: Address.fromScAddress(ic.contractAddress()).toString(),
			function: bytes(ic.functionName()).toString('latin1'),
			args: ic.args().map(scvalView), auth_entries: ih.auth().length,
		};
	}
	default: throw new Error('unexpected operation ' + body.switch().name);
	}
}

function memoView(m) {
	switch (m.switch().name) {
	case 'memoNone': return { type: 'none' };
	case 'memoText': return { type: 'text', value: hex(bytes(m.text())) };
	case 'memoId': return { type: 'id', value: m.id().toString() };
	case 'memoHash': return { type: 'hash', value: hex(m.hash()) };
	case 'memoReturn': return { type: 'return', value: hex(m.retHash()) };
	default: throw new Error('unexpected memo ' + m.switch().name);
	}
}

/* xdr.Transaction as decoded by the SDK. */
function sdkTxView(t) {
	const cond = t.cond();
	let tb = null;
	const c = cond.switch().name;
	const tbx = c === 'precondTime' ? cond.timeBounds() : c === 'precondV2' ? cond.v2().timeBounds() : null;
	if (tbx) tb = { min_time: tbx.minTime().toString(), max_time: tbx.maxTime().toString() };
	let sd = null;
	if (t.ext().switch() === 1) {
		const d = t.ext().sorobanData();
		const r = d.resources();
		sd = {
			resource_fee: d.resourceFee().toString(), instructions: r.instructions(),
			disk_read_bytes: r.diskReadBytes(), write_bytes: r.writeBytes(),
			read_only: r.footprint().readOnly().length, read_write: r.footprint().readWrite().length,
		};
	}
	const view = {
		source: encodeMuxedAccountToAddress(t.sourceAccount()), fee: t.fee().toString(),
		seq_num: t.seqNum().toString(), time_bounds: tb, memo: memoView(t.memo()),
		operations: t.operations().map(opView), soroban_data: sd,
	};
	if (c === 'precondV2') {
		const v2 = cond.v2(), lb = v2.ledgerBounds();
		view.preconditions_v2 = {
			ledger_bounds: lb ? { min_ledger: lb.minLedger(), max_ledger: lb.maxLedger() } : null,
			min_seq_num: v2.minSeqNum() ? v2.minSeqNum().toString() : null,
			min_seq_age: v2.minSeqAge().toString(), min_seq_ledger_gap: v2.minSeqLedgerGap(),
			extra_signers: v2.extraSigners().length,
		};
	}
	return view;
}

/* outboxctl's JSON for one transaction. */
function ctlTxView(j) {
	const m = j.memo;
	let memo = { type: m.type };
	if (m.type === 'text') memo.value = m.text !== undefined ? hex(Buffer.from(m.text, 'utf8')) : m.text_hex;
	if (m.type === 'id') memo.value = m.id;
	if (m.type === 'hash' || m.type === 'return') memo.value = m.hash;
	const ops = j.operations.map((o) => {
		if (o.type === 'payment') {
			return { source: o.source, type: o.type, destination: o.destination, asset: o.asset, amount: o.amount };
		}
		return {
			source: o.source, type: o.type, contract: o.contract, function: o.function,
			auth_entries: o.auth_entries,
			args: o.args.map((a) => (a.type === 'string' ?
				{ type: 'string', value: a.value !== undefined ? hex(Buffer.from(a.value, 'utf8')) : a.value_hex } :
				{ type: a.type, value: a.value })),
		};
	});
	const view = {
		source: j.source, fee: String(j.fee), seq_num: j.seq_num, time_bounds: j.time_bounds, memo,
		operations: ops, soroban_data: j.soroban_data,
	};
	if (j.preconditions_v2 !== undefined) view.preconditions_v2 = j.preconditions_v2;
	return view;
}

function same(got, want, what) {
	assert.deepStrictEqual(got, want, what);
}

function verifySigs(sigs, hash, signer, what) {
	assert.ok(sigs.length >= 1, what + ': no signatures');
	const kp = Keypair.fromPublicKey(signer);
	const mine = sigs.filter((s) => hex(s.hint()) === hex(kp.signatureHint()));
	assert.ok(mine.length >= 1, what + ': no signature with the signer\'s hint');
	for (const s of mine) assert.ok(kp.verify(hash, s.signature()), what + ': signature does not verify');
}

/* ---------- (a) C builds, the SDK checks ---------- */

const PASS_A = 'Test SDF Network ; September 2015';

function checkFromC(L) {
	const env = xdr.TransactionEnvelope.fromXDR(L.b64, 'base64');
	assert.strictEqual(env.toXDR('base64'), L.b64, 'SDK re-encoding differs');
	const tx = TransactionBuilder.fromXDR(L.b64, PASS_A);
	assert.strictEqual(tx.toEnvelope().toXDR('base64'), L.b64, 'SDK transaction re-encoding differs');
	assert.strictEqual(hex(tx.hash()), L.hash, 'hash');
	let inner, innerXdr;
	if (L.type === 'fee_bump') {
		assert.ok(tx instanceof FeeBumpTransaction, 'not a fee bump in the SDK');
		const fb = env.feeBump().tx();
		assert.strictEqual(encodeMuxedAccountToAddress(fb.feeSource()), L.fee_source, 'fee_source');
		assert.strictEqual(fb.fee().toString(), L.fee, 'fee bump fee');
		assert.strictEqual(tx.feeSource, L.fee_source, 'feeSource');
		assert.strictEqual(tx.fee, L.fee, 'fee');
		assert.strictEqual(extractBaseAddress(L.fee_source), L.fee_signer, 'fee signer');
		verifySigs(tx.signatures, tx.hash(), L.fee_signer, 'fee bump');
		inner = tx.innerTransaction;
		innerXdr = fb.innerTx().v1().tx();
	} else {
		assert.ok(tx instanceof Transaction && !(tx instanceof FeeBumpTransaction), 'not a v1 tx');
		inner = tx;
		innerXdr = env.v1().tx();
	}
	const { hash: innerHash, ...intended } = L.inner;
	same(sdkTxView(innerXdr), intended, 'fields');
	assert.strictEqual(hex(inner.hash()), innerHash, 'inner hash');
	assert.strictEqual(inner.source, intended.source, 'source');
	assert.strictEqual(inner.fee, intended.fee, 'inner fee');
	assert.strictEqual(inner.sequence, intended.seq_num, 'sequence');
	assert.strictEqual(extractBaseAddress(intended.source), L.signer, 'signer');
	verifySigs(inner.signatures, inner.hash(), L.signer, 'inner');
	if (L.extra.idempotency_key !== undefined) {
		const opRef = crypto.createHash('sha256').update(L.extra.idempotency_key).digest('hex');
		const args = intended.operations[0].args;
		same(args[args.length - 1], { type: 'bytes', value: opRef }, 'op_ref = SHA-256(idempotency key)');
	}
}

function directionA() {
	const r = spawnSync(GEN, [String(COUNT), SEED, PASS_A], { maxBuffer: 1 << 30, encoding: 'utf8' });
	if (r.status !== 0) throw new Error('interop_gen failed: ' + r.stderr);
	const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
	assert.strictEqual(lines.length, COUNT, 'interop_gen line count');
	const stats = { tx: 0, fee_bump: 0, invoke: 0, payment: 0 };
	lines.forEach((L, i) => {
		try {
			checkFromC(L);
		} catch (e) {
			e.message = `C->SDK #${i} (seed ${SEED}): ${e.message}\n${L.b64}`;
			throw e;
		}
		stats[L.type]++;
		stats[L.inner.operations[0].type === 'payment' ? 'payment' : 'invoke']++;
	});
	/* The comparison must be able to fail: a tampered expectation is caught. */
	const t = JSON.parse(JSON.stringify(lines[0]));
	t.inner.seq_num = (BigInt(t.inner.seq_num) ^ 1n).toString();
	assert.throws(() => checkFromC(t), /fields/, 'self-check: a tampered seq_num went unnoticed');
	return stats;
}

/* ---------- (b) the SDK builds, outboxctl checks ---------- */

const PASS_B = 'outboxd interop ; ' + SEED;

function rint(n) { return crypto.randomInt(0, n); }
function rbig(bits) { return BigInt('0x' + crypto.randomBytes(Math.ceil(bits / 8)).toString('hex')) & ((1n << BigInt(bits)) - 1n); }
function pick(a) { return a[rint(a.length)]; }
const U64_MAX = (1n << 64n) - 1n;
const I64_MAX = (1n << 63n) - 1n;

function rndU64() { return pick([0n, 1n, U64_MAX, rbig(32), rbig(64), rbig(64)]); }
function rndI64() { return pick([-(1n << 63n), I64_MAX, -1n, 0n, BigInt.asIntN(64, rbig(64))]); }
function rndI128() {
	return pick([-(1n << 127n), (1n << 127n) - 1n, -1n, 0n, 1n, rbig(64), -rbig(64), BigInt.asIntN(128, rbig(128))]);
}
function rndAscii(n) { let s = ''; for (let i = 0; i < n; i++) s += String.fromCharCode(0x20 + rint(95)); return s; }
function rndSymbol() {
	const al = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_';
	let s = ''; const n = 1 + rint(32); for (let i = 0; i < n; i++) s += al[rint(al.length)]; return s;
}
function rndContract() { return StrKey.encodeContract(crypto.randomBytes(32)); }

/* A random argument: [xdr.ScVal, its canonical view]. */
function rndScVal() {
	switch (rint(12)) {
	case 0: { const g = Keypair.random().publicKey(); return [new Address(g).toScVal(), { type: 'address', value: g }]; }
	case 1: { const c = rndContract(); return [new Address(c).toScVal(), { type: 'address', value: c }]; }
	case 2: case 3: {
		const v = rndI128();
		const p = new xdr.Int128Parts({ hi: xdr.Int64.fromString((v >> 64n).toString()), lo: xdr.Uint64.fromString((v & U64_MAX).toString()) });
		return [xdr.ScVal.scvI128(p), { type: 'i128', value: v.toString() }];
	}
	case 4: { const v = rndU64(); return [xdr.ScVal.scvU64(xdr.Uint64.fromString(v.toString())), { type: 'u64', value: v.toString() }]; }
	case 5: { const v = rndI64(); return [xdr.ScVal.scvI64(xdr.Int64.fromString(v.toString())), { type: 'i64', value: v.toString() }]; }
	case 6: { const v = pick([0, 1, 4294967295, rint(2 ** 32)]); return [xdr.ScVal.scvU32(v), { type: 'u32', value: v }]; }
	case 7: { const v = pick([-2147483648, 2147483647, -1, rint(2 ** 31)]); return [xdr.ScVal.scvI32(v), { type: 'i32', value: v }]; }
	case 8: { const v = rint(2) === 1; return [xdr.ScVal.scvBool(v), { type: 'bool', value: v }]; }
	case 9: { const s = rndSymbol(); return [xdr.ScVal.scvSymbol(s), { type: 'symbol', value: s }]; }
	case 10: {
		const b = rint(2) ? Buffer.from(rndAscii(rint(60))) : crypto.randomBytes(rint(60));
		return [xdr.ScVal.scvString(b), { type: 'string', value: hex(b) }];
	}
	default: {
		if (rint(4) === 0) return [xdr.ScVal.scvVoid(), { type: 'void', value: null }];
		const b = crypto.randomBytes(rint(100));
		return [xdr.ScVal.scvBytes(b), { type: 'bytes', value: hex(b) }];
	}
	}
}

function rndAuth(contract, fn, args) {
	const invocation = (depth) => new xdr.SorobanAuthorizedInvocation({
		function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(new xdr.InvokeContractArgs({
			contractAddress: new Address(contract).toScAddress(), functionName: fn, args,
		})),
		subInvocations: depth > 0 ? [invocation(depth - 1)] : [],
	});
	let credentials;
	if (rint(2)) {
		credentials = xdr.SorobanCredentials.sorobanCredentialsSourceAccount();
	} else {
		const sig = xdr.ScVal.scvVec([xdr.ScVal.scvMap([
			new xdr.ScMapEntry({ key: xdr.ScVal.scvSymbol('public_key'), val: xdr.ScVal.scvBytes(crypto.randomBytes(32)) }),
			new xdr.ScMapEntry({ key: xdr.ScVal.scvSymbol('signature'), val: xdr.ScVal.scvBytes(crypto.randomBytes(64)) }),
		])]);
		credentials = xdr.SorobanCredentials.sorobanCredentialsAddress(new xdr.SorobanAddressCredentials({
			address: new Address(Keypair.random().publicKey()).toScAddress(),
			nonce: xdr.Int64.fromString(rndI64().toString()),
			signatureExpirationLedger: rint(2 ** 32), signature: sig,
		}));
	}
	return new xdr.SorobanAuthorizationEntry({ credentials, rootInvocation: invocation(rint(3)) });
}

function stroopsToAmount(s) {
	const w = s / 10000000n, f = s % 10000000n;
	return w.toString() + '.' + f.toString().padStart(7, '0');
}

function rndAsset() {
	const al = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
	const code = (n) => { let s = ''; for (let i = 0; i < n; i++) s += al[rint(al.length)]; return s; };
	switch (rint(3)) {
	case 0: return [Asset.native(), 'native'];
	case 1: { const c = code(1 + rint(4)), i = Keypair.random().publicKey(); return [new Asset(c, i), c + ':' + i]; }
	default: { const c = code(5 + rint(8)), i = Keypair.random().publicKey(); return [new Asset(c, i), c + ':' + i]; }
	}
}

function rndAccount(kp, seq, muxed) {
	const acc = new Account(kp.publicKey(), (seq - 1n).toString());
	if (!muxed) return [acc, kp.publicKey()];
	const m = new MuxedAccount(acc, rndU64().toString());
	return [m, m.accountId()];
}

/* Builds one random signed envelope; returns {b64, expect, tx, inner}. */
function buildWithSdk() {
	const kp = Keypair.random();
	const soroban = rint(2) === 0;
	const seq = pick([1n, I64_MAX, (rbig(63) | 1n)]);
	const [account, sourceStr] = rndAccount(kp, seq, !soroban && rint(3) === 0);
	const minTime = rint(3) ? 0n : rndU64();
	const maxTime = rint(4) === 0 ? 0n : minTime + rbig(64) % (U64_MAX - minTime + 1n);
	const expect = {
		source: sourceStr, seq_num: seq.toString(),
		time_bounds: { min_time: minTime.toString(), max_time: maxTime.toString() },
	};
	let memo = Memo.none();
	expect.memo = { type: 'none' };
	const ops = [];
	let nops = 1, resourceFee = 0n, sorobanData = null;
	if (soroban) {
		const contract = rndContract(), fn = rndSymbol();
		const args = []; const views = [];
		for (let i = rint(9); i > 0; i--) { const [v, w] = rndScVal(); args.push(v); views.push(w); }
		const auth = []; for (let i = rint(3); i > 0; i--) auth.push(rndAuth(contract, fn, args));
		ops.push(Operation.invokeContractFunction({ contract, function: fn, args, auth }));
		expect.operations = [{ source: null, type: 'invoke_host_function', contract, function: fn, args: views, auth_entries: auth.length }];
		resourceFee = pick([0n, rbig(24), rbig(31)]);
		const ins = rint(2 ** 32), rd = rint(2 ** 32), wr = rint(2 ** 32);
		const ro = [], rw = [];
		for (let i = rint(3); i > 0; i--) {
			ro.push(xdr.LedgerKey.contractData(new xdr.LedgerKeyContractData({
				contract: new Address(contract).toScAddress(), key: xdr.ScVal.scvLedgerKeyContractInstance(),
				durability: xdr.ContractDataDurability.persistent(),
			})));
		}
		for (let i = rint(3); i > 0; i--) {
			rw.push(xdr.LedgerKey.account(new xdr.LedgerKeyAccount({ accountId: Keypair.random().xdrAccountId() })));
		}
		sorobanData = new SorobanDataBuilder().setResources(ins, rd, wr).setResourceFee(resourceFee.toString())
			.setFootprint(ro, rw).build();
		expect.soroban_data = {
			resource_fee: resourceFee.toString(), instructions: ins, disk_read_bytes: rd, write_bytes: wr,
			read_only: ro.length, read_write: rw.length,
		};
	} else {
		nops = 1 + rint(5);
		expect.operations = [];
		for (let i = 0; i < nops; i++) {
			const dkp = Keypair.random();
			const dest = rint(3) === 0 ? new MuxedAccount(new Account(dkp.publicKey(), '0'), rndU64().toString()).accountId() : dkp.publicKey();
			const [asset, assetStr] = rndAsset();
			const amount = pick([1n, I64_MAX, 1n + rbig(62)]);
			const src = rint(4) === 0 ? Keypair.random().publicKey() : undefined;
			ops.push(Operation.payment({ destination: dest, asset, amount: stroopsToAmount(amount), source: src }));
			expect.operations.push({ source: src || null, type: 'payment', destination: dest, asset: assetStr, amount: amount.toString() });
		}
		expect.soroban_data = null;
		switch (rint(5)) {
		case 1: { const s = rndAscii(rint(29)); memo = Memo.text(s); expect.memo = { type: 'text', value: hex(Buffer.from(s)) }; break; }
		case 2: { const v = rndU64(); memo = Memo.id(v.toString()); expect.memo = { type: 'id', value: v.toString() }; break; }
		case 3: { const h = crypto.randomBytes(32); memo = Memo.hash(h); expect.memo = { type: 'hash', value: hex(h) }; break; }
		case 4: { const h = crypto.randomBytes(32); memo = Memo.return(h); expect.memo = { type: 'return', value: hex(h) }; break; }
		default: break;
		}
	}
	const maxBase = (4294967295n - resourceFee) / BigInt(nops);
	const baseFee = pick([100n, 1n + rbig(16), maxBase]);
	const b = new TransactionBuilder(account, {
		fee: baseFee.toString(), networkPassphrase: PASS_B, memo,
		timebounds: { minTime: minTime.toString(), maxTime: maxTime.toString() },
	});
	if (rint(5) === 0) { /* PRECOND_V2 (the SDK always writes minSeqNum, 0 when unset) */
		const v2 = { ledger_bounds: null, min_seq_num: '0', min_seq_age: '0', min_seq_ledger_gap: 0, extra_signers: 0 };
		if (rint(2)) {
			const lo = pick([0, rint(2 ** 32)]);
			const hi = pick([0, lo + rint(2 ** 32 - lo)]);
			b.setLedgerbounds(lo, hi);
			v2.ledger_bounds = { min_ledger: lo, max_ledger: hi };
		}
		if (rint(2)) { const v = rbig(63).toString(); b.setMinAccountSequence(v); v2.min_seq_num = v; }
		if (rint(2)) { const v = rint(2 ** 40); b.setMinAccountSequenceAge(v); v2.min_seq_age = String(v); }
		if (rint(2)) { const v = rint(2 ** 32); b.setMinAccountSequenceLedgerGap(v); v2.min_seq_ledger_gap = v; }
		const n = v2.ledger_bounds || v2.min_seq_num !== '0' || v2.min_seq_age !== '0' || v2.min_seq_ledger_gap ? rint(3) : 1 + rint(2);
		const signers = [];
		for (let i = 0; i < n; i++) {
			signers.push(pick([Keypair.random().publicKey(), StrKey.encodeSha256Hash(crypto.randomBytes(32)),
				StrKey.encodePreAuthTx(crypto.randomBytes(32))]));
		}
		if (n) b.setExtraSigners(signers);
		v2.extra_signers = n;
		expect.preconditions_v2 = v2;
	}
	ops.forEach((o) => b.addOperation(o));
	if (sorobanData) b.setSorobanData(sorobanData);
	const inner = b.build();
	expect.fee = (baseFee * BigInt(nops) + resourceFee).toString();
	inner.sign(kp);
	for (let i = rint(4) === 0 ? 1 + rint(3) : 0; i > 0; i--) inner.sign(Keypair.random());
	if (rint(3) !== 0) return { b64: inner.toEnvelope().toXDR('base64'), expect, tx: inner, inner, bump: null };

	const feeKp = Keypair.random();
	const feeSource = rint(3) === 0 ? new MuxedAccount(new Account(feeKp.publicKey(), '0'), rndU64().toString()).accountId() : feeKp.publicKey();
	const rate = (BigInt(inner.fee) - resourceFee) / BigInt(nops);
	const base = (rate > 100n ? rate + 1n : 100n) + pick([0n, rbig(20)]);
	const bump = TransactionBuilder.buildFeeBumpTransaction(feeSource, base.toString(), inner, PASS_B);
	bump.sign(feeKp);
	return {
		b64: bump.toEnvelope().toXDR('base64'), expect, tx: bump, inner,
		bump: { fee_source: feeSource, fee: (base * BigInt(nops + 1) + resourceFee).toString() },
	};
}

function ctlDecode(b64) {
	const out = execFileSync(CTL, ['tx', 'decode', '--passphrase', PASS_B, b64], { encoding: 'utf8', maxBuffer: 1 << 26 });
	return JSON.parse(out);
}

function sigView(sigs) { return sigs.map((s) => ({ hint: hex(s.hint()), signature: hex(s.signature()) })); }

function checkFromSdk(B, j) {
	const innerJ = B.bump ? j.inner : j;
	assert.strictEqual(j.type, B.bump ? 'fee_bump' : 'tx', 'type');
	assert.strictEqual(j.hash, hex(B.tx.hash()), 'hash');
	assert.strictEqual(innerJ.hash, hex(B.inner.hash()), 'inner hash');
	same(ctlTxView(innerJ), B.expect, 'fields vs the SDK build inputs');
	const env = xdr.TransactionEnvelope.fromXDR(B.b64, 'base64');
	const innerXdr = B.bump ? env.feeBump().tx().innerTx().v1().tx() : env.v1().tx();
	same(ctlTxView(innerJ), sdkTxView(innerXdr), 'fields vs the SDK decode');
	same(innerJ.signatures, sigView(B.inner.signatures), 'inner signatures');
	if (B.bump) {
		assert.strictEqual(j.fee_source, B.bump.fee_source, 'fee_source');
		assert.strictEqual(j.fee, B.bump.fee, 'fee bump fee');
		assert.strictEqual(j.fee, B.tx.fee, 'fee bump fee (SDK)');
		same(j.signatures, sigView(B.tx.signatures), 'fee bump signatures');
	}
}

function directionB() {
	const stats = { tx: 0, fee_bump: 0, invoke: 0, payment: 0, ops: 0, args: 0, precond_v2: 0 };
	for (let i = 0; i < COUNT; i++) {
		const B = buildWithSdk();
		const j = ctlDecode(B.b64);
		try {
			checkFromSdk(B, j);
		} catch (e) {
			e.message = `SDK->C #${i}: ${e.message}\n${B.b64}`;
			throw e;
		}
		if (i === 0) { /* the comparison must be able to fail */
			const t = JSON.parse(JSON.stringify(j));
			(B.bump ? t.inner : t).seq_num += '1';
			assert.throws(() => checkFromSdk(B, t), /fields/, 'self-check: a tampered seq_num went unnoticed');
		}
		stats[B.bump ? 'fee_bump' : 'tx']++;
		stats[B.expect.soroban_data ? 'invoke' : 'payment']++;
		stats.ops += B.expect.operations.length;
		if (B.expect.preconditions_v2) stats.precond_v2++;
		stats.args += B.expect.operations.reduce((n, o) => n + (o.args ? o.args.length : 0), 0);
	}
	/* The same envelope through stdin with the passphrase from the environment,
	 * and without any passphrase (hash omitted, said so). */
	const B = buildWithSdk();
	const viaEnv = spawnSync(CTL, ['tx', 'decode'], {
		input: '\n ' + B.b64 + '\n', encoding: 'utf8',
		env: { ...process.env, STELLAR_NETWORK_PASSPHRASE: PASS_B },
	});
	assert.strictEqual(viaEnv.status, 0, 'stdin decode: ' + viaEnv.stderr);
	checkFromSdk(B, JSON.parse(viaEnv.stdout));
	const env2 = { ...process.env };
	delete env2.STELLAR_NETWORK_PASSPHRASE;
	const noPass = JSON.parse(execFileSync(CTL, ['tx', 'decode', B.b64], { encoding: 'utf8', env: env2 }));
	assert.strictEqual(noPass.hash, null, 'hash without passphrase');
	assert.match(noPass.hash_omitted, /passphrase/, 'hash_omitted');
	/* Bad input gets exit 1 and one line. */
	const r = spawnSync(CTL, ['tx', 'decode', 'AAAA'], { encoding: 'utf8' });
	assert.strictEqual(r.status, 1, 'bad input exit status');
	assert.match(r.stderr, /^outboxctl tx decode: .+\n$/, 'bad input message');
	return stats;
}

try {
	const a = directionA();
	console.log(`interop C->SDK: ${COUNT} transactions ok (seed ${SEED}): ${JSON.stringify(a)}`);
	const b = directionB();
	console.log(`interop SDK->C: ${COUNT} transactions ok: ${JSON.stringify(b)}`);
} catch (e) {
	console.error('interop FAILED: ' + e.message);
	process.exit(1);
}
