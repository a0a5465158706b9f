// sdk_rpc.js - stellar-sim driven by the official SDK's own RPC client
// (@stellar/stellar-sdk rpc.Server), the way a new user would: every answer
// must parse in the SDK, and a vault deposit goes from simulation to a
// SUCCESS whose returnValue is SCV_VOID. sdk_flow.js covers the XDR with
// @stellar/stellar-base; this covers the JSON shapes rpc.Server insists on
// (getLatestLedger's metadataXdr, getTransaction's TransactionMeta, ...).
//
//   node tests/sim/sdk_rpc.js <build dir>
//
// The SDK comes from tests/sim/node_modules (ops/lib/prepare.d/sim.sh
// installs it). Starts <build dir>/stellar-sim on an ephemeral port with an
// hour-long ledger clock and closes ledgers itself, so every step is
// deterministic. Exits non-zero on any failure, including a missing SDK.
'use strict';
const path = require('path');
const crypto = require('crypto');
const { spawn } = require('child_process');
const sdk = require(path.join(__dirname, 'node_modules', '@stellar/stellar-sdk'));
const { rpc, Keypair, TransactionBuilder, Networks, Contract, Address, nativeToScVal, xdr,
	StrKey } = sdk;

const PASS = Networks.TESTNET;
const VAULT = StrKey.encodeContract(crypto.createHash('sha256').update('outboxd vault contract').digest());
const START_SEQ = '30064771072';
let base, child;

function check(cond, what) {
	if (!cond) throw new Error('check failed: ' + what);
}

async function debug(p, body) {
	const r = await fetch(base + p, { method: 'POST', body: JSON.stringify(body),
		headers: { 'content-type': 'application/json' } });
	const text = await r.text();
	check(r.status === 200, `${p}: HTTP ${r.status} ${text}`);
	return JSON.parse(text);
}

const close = async (n = 1) => (await debug('/debug/close', { ledgers: n })).latest_ledger;

async function startSim() {
	const bin = path.resolve(process.argv[2] || 'build', 'stellar-sim');
	child = spawn(bin, ['--listen', '127.0.0.1:0', '--passphrase', PASS, '--ledger-ms', '3600000',
		'--debug'], { stdio: ['ignore', 'pipe', 'inherit'] });
	const line = await new Promise((res, rej) => {
		child.stdout.once('data', (d) => res(String(d)));
		child.once('exit', () => rej(new Error('stellar-sim exited')));
	});
	const m = /^listening (\S+)/.exec(line);
	check(m, 'listening line: ' + line);
	base = 'http://' + m[1];
}

// The node-level methods, each parsed by the SDK.
async function readMethods(server) {
	check((await server.getHealth()).status === 'healthy', 'getHealth');
	check((await server.getNetwork()).passphrase === PASS, 'getNetwork passphrase');
	check((await server.getVersionInfo()).protocolVersion === 23, 'getVersionInfo');
	const ll = await server.getLatestLedger();
	check(ll.headerXdr.ledgerSeq === ll.sequence, 'headerXdr ledgerSeq');
	check(ll.metadataXdr.type === 'v1', 'metadataXdr is a LedgerCloseMeta v1');
	const entry = ll.metadataXdr.value.ledgerHeader;
	check(entry.header.ledgerSeq === ll.sequence, 'metadataXdr header sequence');
	check(Buffer.from(entry.hash.toXdr()).toString('hex') === ll.id, 'metadataXdr hash == id');
	check(Buffer.from(sdk.hash(ll.headerXdr.toXdr())).toString('hex') === ll.id,
		'id == SHA-256(headerXdr)');
	return ll;
}

// deposit(user, amount, op_ref) on the vault, simulated and prepared by the SDK.
async function prepareDeposit(server, kp, amount) {
	const account = await server.getAccount(kp.publicKey());
	check(account.sequenceNumber() === START_SEQ, 'getAccount sequence ' + account.sequenceNumber());
	// maxTime from the chain's clock (the latest close time an answer
	// reported), never from ours: the sim's close times may run ahead.
	const chainNow = Number((await server.getLatestLedger()).closeTime);
	const opRef = crypto.createHash('sha256').update('sdk_rpc:deposit:1').digest();
	const op = new Contract(VAULT).call('deposit', new Address(kp.publicKey()).toScVal(),
		nativeToScVal(BigInt(amount), { type: 'i128' }), xdr.ScVal.scvBytes(opRef));
	const tx = new TransactionBuilder(account, { fee: '100', networkPassphrase: PASS })
		.addOperation(op).setTimebounds(0, chainNow + 300).build();
	const sim = await server.simulateTransaction(tx);
	check(rpc.Api.isSimulationSuccess(sim), 'simulate: ' + JSON.stringify(sim.error));
	check(sim.result.retval.type === 'scvVoid', 'simulated return value void');
	check(sim.result.auth.length === 1, 'one auth entry');
	const prepared = await server.prepareTransaction(tx);
	check(BigInt(prepared.fee) === 100n + BigInt(sim.minResourceFee), 'fee = bid + minResourceFee');
	prepared.sign(kp);
	return prepared;
}

// getTransaction until it is no longer NOT_FOUND, closing a ledger between polls.
async function pollUntilFound(server, hash) {
	for (let round = 0; round < 10; round++) {
		const got = await server.getTransaction(hash);
		if (got.status !== rpc.Api.GetTransactionStatus.NOT_FOUND)
			return got;
		await close();
	}
	throw new Error('check failed: ' + hash + ' still NOT_FOUND after 10 ledgers');
}

async function main() {
	await startSim();
	const server = new rpc.Server(base, { allowHttp: true });
	await readMethods(server);
	const kp = Keypair.random();
	await debug('/debug/accounts', { accounts: [{ id: kp.publicKey(), seq: START_SEQ, balance: '1000000000' }] });

	const prepared = await prepareDeposit(server, kp, 12345);
	const sent = await server.sendTransaction(prepared);
	check(sent.status === 'PENDING', 'sendTransaction: ' + JSON.stringify(sent));
	check(sent.hash === Buffer.from(prepared.hash()).toString('hex'), 'sim hash == SDK hash');
	const before = await server.getTransaction(sent.hash); // no ledger has closed since
	check(before.status === 'NOT_FOUND' && before.latestLedger === sent.latestLedger, 'NOT_FOUND first');
	const got = await pollUntilFound(server, sent.hash);
	check(got.status === rpc.Api.GetTransactionStatus.SUCCESS, 'status ' + got.status);
	check(got.resultXdr.result.type === 'txSuccess', 'txSuccess');
	check(got.resultMetaXdr.type === 'v4', 'TransactionMeta v4');
	check(got.returnValue && got.returnValue.type === 'scvVoid', 'returnValue is void');
	check((await server.getAccount(kp.publicKey())).sequenceNumber() === String(BigInt(START_SEQ) + 1n),
		'sequence consumed');
	const page = await server.getTransactions({ startLedger: got.ledger, pagination: { limit: 5 } });
	check(page.transactions.length === 1 && page.transactions[0].returnValue.type === 'scvVoid',
		'getTransactions returnValue');
	const fees = await server.getFeeStats();
	check(fees.sorobanInclusionFee.transactionCount === '1', 'fee stats count the deposit');

	// A lagging node's answers parse the same way: one ledger behind, the
	// deposit is not there yet, and the account still has its old sequence.
	await debug('/debug/faults', { ingest_lag_ledgers: 1 });
	const lagged = await server.getTransaction(sent.hash);
	check(lagged.status === 'NOT_FOUND' && lagged.latestLedger === got.ledger - 1, 'lagging NOT_FOUND');
	check((await server.getAccount(kp.publicKey())).sequenceNumber() === START_SEQ, 'lagging sequence');
	check((await server.getLatestLedger()).sequence === got.ledger - 1, 'lagging getLatestLedger');
	await close();
	check((await server.getTransaction(sent.hash)).status === 'SUCCESS', 'found once ingested');
	console.log('sdk_rpc: ok');
}

main().then(() => { child.kill('SIGTERM'); }, (e) => {
	console.error(e && e.stack ? e.stack : JSON.stringify(e));
	if (child) child.kill('SIGTERM');
	process.exitCode = 1;
});
