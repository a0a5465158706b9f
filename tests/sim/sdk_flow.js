// sdk_flow.js - stellar-sim against the official SDK (@stellar/stellar-base):
// transactions built and signed by the SDK are accepted and execute, every
// XDR the sim answers with decodes in the SDK, and SDK-built bad
// transactions get the right result codes.
//
//   node tests/sim/sdk_flow.js <build dir>
//
// Starts <build dir>/stellar-sim on an ephemeral port and stops it at the end.
// Exits non-zero (with the failing check) on any mismatch.
'use strict';
const path = require('path');
const crypto = require('crypto');
const { spawn } = require('child_process');
const sdk = require(path.join(__dirname, '..', 'interop', 'node_modules', '@stellar/stellar-base'));
const { Keypair, Account, TransactionBuilder, Operation, Networks, xdr, Address, StrKey,
	nativeToScVal, SorobanDataBuilder, Asset } = sdk;

const PASS = Networks.TESTNET;
const VAULT = StrKey.encodeContract(crypto.createHash('sha256').update('outboxd vault contract').digest());
let base, child;

function check(cond, what) {
	if (!cond) throw new Error('check failed: ' + what);
}

async function post(p, body) {
	const r = await fetch(base + p, { method: 'POST', body: JSON.stringify(body),
		headers: { 'content-type': 'application/json' } });
	check(r.status === 200, `${p}: HTTP ${r.status}`);
	return r.json();
}

async function rpc(method, params) {
	const r = await post('/', { jsonrpc: '2.0', id: 1, method, params });
	check(r.result, `${method}: ${JSON.stringify(r.error)}`);
	return r.result;
}

const close = (n = 1) => post('/debug/close', { ledgers: n });

async function newAccount(balance) {
	const kp = Keypair.random();
	await post('/debug/accounts', { accounts: [{ id: kp.publicKey(), seq: '30064771072', balance: String(balance) }] });
	return { kp, acct: new Account(kp.publicKey(), '30064771072') };
}

function vaultOp(fn, user, amount, key, auth) {
	const opRef = crypto.createHash('sha256').update(key).digest();
	const args = fn === 'rebalance' ? [] : [new Address(user).toScVal()];
	args.push(nativeToScVal(BigInt(amount), { type: 'i128' }), xdr.ScVal.scvBytes(opRef));
	return { op: Operation.invokeContractFunction({ contract: VAULT, function: fn, args, auth: auth || [] }), opRef };
}

// Simulate, then rebuild with the simulation's data and auth, and sign.
async function buildVault(who, fn, user, amount, key, incl = 100, passphrase = PASS) {
	const seq = who.acct.sequenceNumber();
	const first = vaultOp(fn, user, amount, key);
	const unsigned = new TransactionBuilder(new Account(who.kp.publicKey(), seq), { fee: String(incl), networkPassphrase: PASS })
		.addOperation(first.op).setTimeout(300).build();
	const sim = await rpc('simulateTransaction', { transaction: unsigned.toXDR() });
	check(!sim.error, 'simulate: ' + sim.error);
	check(typeof sim.minResourceFee === 'string' && typeof sim.latestLedger === 'number', 'simulate shape');
	const data = xdr.SorobanTransactionData.fromXDR(sim.transactionData, 'base64');
	check(data.resourceFee().toString() === sim.minResourceFee, 'minResourceFee == transactionData.resourceFee');
	check(data.resources().footprint().readOnly().length === 1, 'footprint readOnly: contract instance');
	const auth = sim.results[0].auth.map((a) => xdr.SorobanAuthorizationEntry.fromXDR(a, 'base64'));
	check(auth.length === 1 && auth[0].credentials().switch().name === 'sorobanCredentialsSourceAccount', 'auth entry');
	const final = vaultOp(fn, user, amount, key, auth);
	const tx = new TransactionBuilder(new Account(who.kp.publicKey(), seq), {
		fee: String(incl), networkPassphrase: passphrase }) // the SDK adds resourceFee
		.addOperation(final.op).setSorobanData(new SorobanDataBuilder(sim.transactionData).build())
		.setTimeout(300).build();
	check(Number(tx.fee) === incl + Number(sim.minResourceFee), 'fee = bid + minResourceFee');
	tx.sign(who.kp);
	return { tx, opRef: final.opRef };
}

function resultCode(b64) {
	return xdr.TransactionResult.fromXDR(b64, 'base64').result().switch().name;
}

async function main() {
	const bin = path.resolve(process.argv[2] || 'build', 'stellar-sim');
	child = spawn(bin, ['--listen', '127.0.0.1:0', '--passphrase', PASS, '--ledger-ms', '3600000', '--debug'],
		{ stdio: ['ignore', 'pipe', 'inherit'] });
	const line = await new Promise((res, rej) => {
		child.stdout.once('data', (d) => res(String(d)));
		child.once('exit', () => rej(new Error('stellar-sim exited')));
	});
	const m = /^listening (\S+)/.exec(line);
	check(m, 'listening line: ' + line);
	base = 'http://' + m[1];

	// getNetwork / getLatestLedger header decode in the SDK
	check((await rpc('getNetwork')).passphrase === PASS, 'passphrase');
	const ll = await rpc('getLatestLedger');
	const hdr = xdr.LedgerHeader.fromXDR(ll.headerXdr, 'base64');
	check(hdr.ledgerSeq() === ll.sequence && hdr.baseFee() === 100, 'ledger header');

	// 1. an SDK-built, SDK-signed vault deposit is accepted and executes
	const alice = await newAccount(1e9);
	const dep = await buildVault(alice, 'deposit', alice.kp.publicKey(), '12345', 'deposit:u1:r1');
	let r = await rpc('sendTransaction', { transaction: dep.tx.toXDR() });
	check(r.status === 'PENDING', 'deposit PENDING: ' + JSON.stringify(r));
	check(r.hash === dep.tx.hash().toString('hex'), 'sim hash == SDK hash');
	await close();
	let g = await rpc('getTransaction', { hash: r.hash });
	check(g.status === 'SUCCESS', 'deposit SUCCESS: ' + JSON.stringify(g));
	check(resultCode(g.resultXdr) === 'txSuccess', 'result txSuccess');
	xdr.TransactionMeta.fromXDR(g.resultMetaXdr, 'base64');
	check(TransactionBuilder.fromXDR(g.envelopeXdr, PASS).hash().equals(dep.tx.hash()), 'envelopeXdr round trip');
	const ex = await (await fetch(base + '/debug/executions')).json();
	check(ex.by_ref[dep.opRef.toString('hex')] === 1, 'executed once by op_ref');
	alice.acct.incrementSequenceNumber();

	// getLedgerEntries: the account entry decodes and carries the new seqNum
	const key = xdr.LedgerKey.account(new xdr.LedgerKeyAccount({ accountId: alice.kp.xdrAccountId() }));
	const le = await rpc('getLedgerEntries', { keys: [key.toXDR('base64')] });
	const acc = xdr.LedgerEntryData.fromXDR(le.entries[0].xdr, 'base64').account();
	check(acc.seqNum().toString() === alice.acct.sequenceNumber(), 'seqNum ' + acc.seqNum().toString());

	// 2. an SDK fee bump of a fresh inner tx executes once, found by the inner hash
	const payer = await newAccount(1e9);
	const inner = await buildVault(alice, 'deposit', alice.kp.publicKey(), '5', 'deposit:u1:r2');
	const fb = TransactionBuilder.buildFeeBumpTransaction(payer.kp, '70000', inner.tx, PASS);
	fb.sign(payer.kp);
	r = await rpc('sendTransaction', { transaction: fb.toXDR() });
	check(r.status === 'PENDING', 'fee bump PENDING: ' + JSON.stringify(r));
	await close();
	g = await rpc('getTransaction', { hash: inner.tx.hash().toString('hex') });
	check(g.status === 'SUCCESS' && g.feeBump === true, 'bumped inner found by inner hash');
	check(resultCode(g.resultXdr) === 'txFeeBumpInnerSuccess', 'txFeeBumpInnerSuccess');
	alice.acct.incrementSequenceNumber();
	// a second bump of the applied inner tx: txFEE_BUMP_INNER_FAILED / txBAD_SEQ
	const fb2 = TransactionBuilder.buildFeeBumpTransaction(payer.kp, '80000', inner.tx, PASS);
	fb2.sign(payer.kp);
	r = await rpc('sendTransaction', { transaction: fb2.toXDR() });
	check(r.status === 'ERROR', 'second bump ERROR');
	const res = xdr.TransactionResult.fromXDR(r.errorResultXdr, 'base64').result();
	check(res.switch().name === 'txFeeBumpInnerFailed', 'txFeeBumpInnerFailed');
	check(res.innerResultPair().result().result().switch().name === 'txBadSeq', 'inner txBadSeq');

	// 2b. a withdrawal beyond the balance is included and FAILS on chain
	const wd = await buildVault(alice, 'withdraw', alice.kp.publicKey(), String(1e12), 'withdraw:u1:r1');
	r = await rpc('sendTransaction', { transaction: wd.tx.toXDR() });
	check(r.status === 'PENDING', 'overdraft PENDING: ' + JSON.stringify(r));
	await close();
	g = await rpc('getTransaction', { hash: r.hash });
	check(g.status === 'FAILED', 'overdraft FAILED: ' + JSON.stringify(g));
	const fr = xdr.TransactionResult.fromXDR(g.resultXdr, 'base64');
	check(fr.result().switch().name === 'txFailed', 'txFailed');
	check(fr.result().results()[0].tr().invokeHostFunctionResult().switch().name === 'invokeHostFunctionTrapped',
		'invokeHostFunctionTrapped');
	alice.acct.incrementSequenceNumber();

	// 3. SDK-built bad transactions
	const wrongNet = await buildVault(alice, 'deposit', alice.kp.publicKey(), '5', 'k3', 100, Networks.PUBLIC);
	r = await rpc('sendTransaction', { transaction: wrongNet.tx.toXDR() });
	check(r.status === 'ERROR' && resultCode(r.errorResultXdr) === 'txBadAuth', 'wrong network: txBadAuth');
	const cheap = await buildVault(alice, 'deposit', alice.kp.publicKey(), '5', 'k4', 50);
	r = await rpc('sendTransaction', { transaction: cheap.tx.toXDR() });
	check(r.status === 'ERROR' && resultCode(r.errorResultXdr) === 'txInsufficientFee', 'low fee: ' + JSON.stringify(r));
	const memoTx = new TransactionBuilder(new Account(alice.kp.publicKey(), alice.acct.sequenceNumber()),
		{ fee: '100000', networkPassphrase: PASS, memo: sdk.Memo.text('no') })
		.addOperation(vaultOp('deposit', alice.kp.publicKey(), '1', 'k5').op)
		.setSorobanData(new SorobanDataBuilder().setResourceFee(90000).build()).setTimeout(300).build();
	memoTx.sign(alice.kp);
	r = await rpc('sendTransaction', { transaction: memoTx.toXDR() });
	check(r.status === 'ERROR' && resultCode(r.errorResultXdr) === 'txSorobanInvalid', 'memo: txSorobanInvalid');

	// 4. an SDK classic payment moves the balance
	const bob = await newAccount(0);
	const pay = new TransactionBuilder(new Account(alice.kp.publicKey(), alice.acct.sequenceNumber()),
		{ fee: '100', networkPassphrase: PASS })
		.addOperation(Operation.payment({ destination: bob.kp.publicKey(), asset: Asset.native(), amount: '1.5' }))
		.setTimeout(300).build();
	pay.sign(alice.kp);
	r = await rpc('sendTransaction', { transaction: pay.toXDR() });
	check(r.status === 'PENDING', 'payment PENDING');
	await close();
	check((await rpc('getTransaction', { hash: r.hash })).status === 'SUCCESS', 'payment SUCCESS');
	const st = await (await fetch(base + '/debug/state')).json();
	check(st.balances[bob.kp.publicKey()] === '15000000', 'bob got 1.5 XLM');
	check(st.vault_contract === VAULT, 'default vault contract id');
	console.log('sdk_flow: ok');
}

main().then(() => { child.kill('SIGTERM'); }, (e) => {
	console.error(e.stack || String(e));
	if (child) child.kill('SIGTERM');
	process.exitCode = 1;
});
