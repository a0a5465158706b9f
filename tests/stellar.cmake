# tests/stellar.cmake - common/stellar/: StrKey, XDR, signing, the builder,
# RPC parsing and classification (unit), and the RPC client against its own
# libmicrohttpd fixture server and, in its "stellar-sim" case, the project's
# simulator (integration).
foreach(s check_classify check_rpc_parse check_sign check_strkey check_txbuild check_xdr)
	outbox_suite(${s} LIBS outbox_stellar)
endforeach()
outbox_suite(check_rpc_client LIBS outbox_stellar PkgConfig::MHD DEPENDS stellar-sim)
