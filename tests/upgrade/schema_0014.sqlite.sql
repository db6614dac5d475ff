BEGIN TRANSACTION;
CREATE TABLE agent_request (
	id VARCHAR(32) NOT NULL, 
	round_id VARCHAR(32) NOT NULL, 
	call_id VARCHAR(32) NOT NULL, 
	owner_id VARCHAR(32) NOT NULL, 
	"key" TEXT NOT NULL, 
	method VARCHAR(40) NOT NULL, 
	params_json TEXT NOT NULL, 
	status VARCHAR(20) NOT NULL, 
	response_json TEXT, 
	answered_at DATETIME, 
	expires_at DATETIME NOT NULL, 
	created_at DATETIME NOT NULL, 
	CONSTRAINT pk_agent_request PRIMARY KEY (id), 
	CONSTRAINT fk_agent_request_call_id_call FOREIGN KEY(call_id) REFERENCES call (id), 
	CONSTRAINT fk_agent_request_owner_id_identity_user FOREIGN KEY(owner_id) REFERENCES identity_user (id), 
	CONSTRAINT fk_agent_request_round_id_call_round FOREIGN KEY(round_id) REFERENCES call_round (id), 
	CONSTRAINT uq_agent_request_round_id UNIQUE (round_id, "key")
);
CREATE TABLE alembic_version (
	version_num VARCHAR(32) NOT NULL, 
	CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);
INSERT INTO "alembic_version" VALUES('0014');
CREATE TABLE audit_checkpoint (
	seq INTEGER NOT NULL, 
	hash VARCHAR(64) NOT NULL, 
	at DATETIME NOT NULL, 
	prev_signature VARCHAR(100) NOT NULL, 
	key_id VARCHAR(16) NOT NULL, 
	signature VARCHAR(100) NOT NULL, 
	CONSTRAINT pk_audit_checkpoint PRIMARY KEY (seq)
);
CREATE TABLE audit_event (
	seq INTEGER NOT NULL, 
	at DATETIME NOT NULL, 
	actor_type VARCHAR(10) NOT NULL, 
	actor_id VARCHAR(32), 
	action VARCHAR(50) NOT NULL, 
	subject_type VARCHAR(20) NOT NULL, 
	subject_id VARCHAR(32) NOT NULL, 
	call_id VARCHAR(32), 
	payload_json TEXT NOT NULL, team_id VARCHAR(32), server VARCHAR(100), tool TEXT, outcome VARCHAR(20), prev_hash VARCHAR(64), hash VARCHAR(64), 
	CONSTRAINT pk_audit_event PRIMARY KEY (seq)
);
INSERT INTO "audit_event" VALUES(1,'2026-12-06 23:50:45.910019','system',NULL,'team_created','team','b2519539ce0f121cf5e7bd9d95fd8d0d',NULL,'{"name":"platform"}','b2519539ce0f121cf5e7bd9d95fd8d0d',NULL,NULL,NULL,'0000000000000000000000000000000000000000000000000000000000000000','201eaa69b7778ed6e6c82f2fb03e72c95d3dc47e1d1f40f8b0e981dd76173126');
INSERT INTO "audit_event" VALUES(2,'2026-12-06 23:50:45.936661','system',NULL,'team_created','team','3745f33a3338afab3eedf326f79b1ea5',NULL,'{"name":"elsewhere"}','3745f33a3338afab3eedf326f79b1ea5',NULL,NULL,NULL,'201eaa69b7778ed6e6c82f2fb03e72c95d3dc47e1d1f40f8b0e981dd76173126','f6497da5f59f6ae59bac4bbc4c9410ed66799d5b57d652b1111d7e5ffacca2dc');
INSERT INTO "audit_event" VALUES(3,'2026-12-06 23:50:46.190171','system',NULL,'membership_added','user','263b2b34505b42736ce6b0c5e7bd1438',NULL,'{"role":"member","team":"platform","user":"dev"}',NULL,NULL,NULL,NULL,'f6497da5f59f6ae59bac4bbc4c9410ed66799d5b57d652b1111d7e5ffacca2dc','1c9734e6692b28af081cc12f002e8e16e9d8d81419a0597ae9dfaf9b3234a60d');
INSERT INTO "audit_event" VALUES(4,'2026-12-06 23:50:46.219685','system',NULL,'token_created','token','64d347e2dd491c4bee22ea373bd29e00',NULL,'{"name":"cli","team":"b2519539ce0f121cf5e7bd9d95fd8d0d","user":"263b2b34505b42736ce6b0c5e7bd1438"}','b2519539ce0f121cf5e7bd9d95fd8d0d',NULL,NULL,NULL,'1c9734e6692b28af081cc12f002e8e16e9d8d81419a0597ae9dfaf9b3234a60d','c4ad36fc751460a7ce734867c2b5d2cf13a737b88eb2f8c7f7f966822e5cf6a9');
INSERT INTO "audit_event" VALUES(5,'2026-12-06 23:50:46.462328','system',NULL,'membership_added','user','4165c768e96d2079aafe3134501c25ec',NULL,'{"role":"approver","team":"platform","user":"lead"}',NULL,NULL,NULL,NULL,'c4ad36fc751460a7ce734867c2b5d2cf13a737b88eb2f8c7f7f966822e5cf6a9','8c67113b9503cd42f6fc9413efb11cfdbdd6717c5b0dcf566db3498d97746e20');
INSERT INTO "audit_event" VALUES(6,'2026-12-06 23:50:46.485964','system',NULL,'token_created','token','861df88df4485951830aa2c401bcb97e',NULL,'{"name":"cli","team":"b2519539ce0f121cf5e7bd9d95fd8d0d","user":"4165c768e96d2079aafe3134501c25ec"}','b2519539ce0f121cf5e7bd9d95fd8d0d',NULL,NULL,NULL,'8c67113b9503cd42f6fc9413efb11cfdbdd6717c5b0dcf566db3498d97746e20','d4e71dd04503f4e5957d21d1dafd80a188c21c64e5e38efa574df1ff40d833d8');
INSERT INTO "audit_event" VALUES(7,'2026-12-06 23:50:46.731268','system',NULL,'membership_added','user','671db1cf38e5496fbfb761c4df52400a',NULL,'{"role":"approver","team":"platform","user":"lead2"}',NULL,NULL,NULL,NULL,'d4e71dd04503f4e5957d21d1dafd80a188c21c64e5e38efa574df1ff40d833d8','f3ef70a1ef460b70241f731b0a1fd142796cb9ff4a145ae7dd5ac6e5e181259e');
INSERT INTO "audit_event" VALUES(8,'2026-12-06 23:50:46.754433','system',NULL,'token_created','token','8aef75bbcf1596eba2f1e8f501b1f1a2',NULL,'{"name":"cli","team":"b2519539ce0f121cf5e7bd9d95fd8d0d","user":"671db1cf38e5496fbfb761c4df52400a"}','b2519539ce0f121cf5e7bd9d95fd8d0d',NULL,NULL,NULL,'f3ef70a1ef460b70241f731b0a1fd142796cb9ff4a145ae7dd5ac6e5e181259e','74bbcd78248e021af551c97b14203dae25c7567a79ea9438c6a982007035a3fd');
INSERT INTO "audit_event" VALUES(9,'2026-12-06 23:50:46.992059','system',NULL,'membership_added','user','a4592cdb3e92528b2e9083de1f69b9a3',NULL,'{"role":"auditor","team":"platform","user":"viewer"}',NULL,NULL,NULL,NULL,'74bbcd78248e021af551c97b14203dae25c7567a79ea9438c6a982007035a3fd','d9c98506bdca177d3d445b31e933311b600100717001a8239090aa0f1ac25182');
INSERT INTO "audit_event" VALUES(10,'2026-12-06 23:50:47.010894','system',NULL,'token_created','token','e3bce6c7d0c5c8c301cef15c3b099a75',NULL,'{"name":"cli","team":"b2519539ce0f121cf5e7bd9d95fd8d0d","user":"a4592cdb3e92528b2e9083de1f69b9a3"}','b2519539ce0f121cf5e7bd9d95fd8d0d',NULL,NULL,NULL,'d9c98506bdca177d3d445b31e933311b600100717001a8239090aa0f1ac25182','b891680520fbf5b412b6433272b7e237770a527c9961af71017dbda64f0e3e8d');
INSERT INTO "audit_event" VALUES(11,'2026-12-06 23:50:47.230049','system',NULL,'membership_added','user','d62575bfbaa2005652b1429bb25fb3cf',NULL,'{"role":"approver","team":"elsewhere","user":"outsider"}',NULL,NULL,NULL,NULL,'b891680520fbf5b412b6433272b7e237770a527c9961af71017dbda64f0e3e8d','eb2d30cae15f11497b2573e7cbde876d06768a1b85ef86a6c2452cf2a62e7618');
INSERT INTO "audit_event" VALUES(12,'2026-12-06 23:50:47.248079','system',NULL,'token_created','token','4f14d7801f0b9db2e0e265c8f014c406',NULL,'{"name":"cli","team":"3745f33a3338afab3eedf326f79b1ea5","user":"d62575bfbaa2005652b1429bb25fb3cf"}','3745f33a3338afab3eedf326f79b1ea5',NULL,NULL,NULL,'eb2d30cae15f11497b2573e7cbde876d06768a1b85ef86a6c2452cf2a62e7618','43766c4306e127762a11ce29def9c0ffa98c0448558eac4e9edf12a55c4a3dbf');
INSERT INTO "audit_event" VALUES(13,'2026-12-06 23:50:47.276729','system',NULL,'server_added','server','02e9352032ddbae0dc658d9dfa38bd1f',NULL,'{"changed":["transport","command","env","headers","credential","trusted","idempotent","internal"],"env_names":["MRTR_LOG"],"header_names":[],"idempotent":false,"internal":true,"name":"mrtr","team":"platform","transport":"stdio","trusted":false,"where":"python tests/servers/mrtr_server.py"}','b2519539ce0f121cf5e7bd9d95fd8d0d','mrtr',NULL,NULL,'43766c4306e127762a11ce29def9c0ffa98c0448558eac4e9edf12a55c4a3dbf','e74d51998c1c27de276c22edc00771aa19b5b03e21fade226f8588c8bda97652');
INSERT INTO "audit_event" VALUES(14,'2026-12-06 23:50:47.365966','system',NULL,'policy_changed','team','b2519539ce0f121cf5e7bd9d95fd8d0d',NULL,'{"after":{"answerers":null,"expiry_action":null,"expiry_minutes":null,"no_self_approval":null,"required_approvals":2,"step_up_minutes":null},"before":null,"scope":"tool:*:two_rounds"}','b2519539ce0f121cf5e7bd9d95fd8d0d',NULL,NULL,NULL,'e74d51998c1c27de276c22edc00771aa19b5b03e21fade226f8588c8bda97652','6cb6d8bbaba3474bc14c159ae63effee6ee95eb9c6d95c3248cb0f108891b1b7');
INSERT INTO "audit_event" VALUES(15,'2026-12-06 23:50:47.505741','user','263b2b34505b42736ce6b0c5e7bd1438','run_created','run','cdefec6ac8a347be20c431b849b5f006',NULL,'{"agent":"pytest","title":"test run","via":"token:64d347e2dd491c4bee22ea373bd29e00"}','b2519539ce0f121cf5e7bd9d95fd8d0d',NULL,NULL,NULL,'6cb6d8bbaba3474bc14c159ae63effee6ee95eb9c6d95c3248cb0f108891b1b7','29fbddb21004b02a927e5e76883ec035b182c10c3d9d41c609c388d934570387');
INSERT INTO "audit_event" VALUES(16,'2026-12-06 23:50:48.977191','user','263b2b34505b42736ce6b0c5e7bd1438','call_started','call','025783d306f8ee67bfd2ebce8c9e9f6f','025783d306f8ee67bfd2ebce8c9e9f6f','{"method":"tools/call","params":{"arguments":{"state":"kept across the upgrade"},"name":"echo_state"},"server":"mrtr","via":"token:64d347e2dd491c4bee22ea373bd29e00"}','b2519539ce0f121cf5e7bd9d95fd8d0d','mrtr','echo_state',NULL,'29fbddb21004b02a927e5e76883ec035b182c10c3d9d41c609c388d934570387','7a7cd2c70d2d9043cf9e5ff1729351153622c48129960edc2e5120cb43ac2f40');
INSERT INTO "audit_event" VALUES(17,'2026-12-06 23:50:49.006125','system',NULL,'request_sent','call','025783d306f8ee67bfd2ebce8c9e9f6f','025783d306f8ee67bfd2ebce8c9e9f6f','{"attempt":1,"job":"0d039e17ec478322ea06ab7ea316bc61","kind":"initial","responses":null}','b2519539ce0f121cf5e7bd9d95fd8d0d','mrtr','echo_state',NULL,'7a7cd2c70d2d9043cf9e5ff1729351153622c48129960edc2e5120cb43ac2f40','5b0f27658c41739a288657ba6487dd10cc0fb04b2116b2928eadc112ead7b42f');
INSERT INTO "audit_event" VALUES(18,'2026-12-06 23:50:49.054323','system',NULL,'round_received','round','d3d96226c487dede130a662b80b149dc','025783d306f8ee67bfd2ebce8c9e9f6f','{"input_requests":{"go":{"method":"elicitation/create","params":{"message":"Echo test: continue?","mode":"form","requestedSchema":{"properties":{"ok":{"title":"OK","type":"boolean"}},"type":"object"}}}},"request_state":{"len":23,"sha256":"58a9e894a8fbb24c3c26d2a2cc914e58e05a055339fc84fc55ebe936b914b4c7"},"round":1}','b2519539ce0f121cf5e7bd9d95fd8d0d','mrtr','echo_state',NULL,'5b0f27658c41739a288657ba6487dd10cc0fb04b2116b2928eadc112ead7b42f','bf3cfc7716639d952bb41fb303d8bf24f7b0f47e8f9cb5c393e597efd680bfba');
INSERT INTO "audit_event" VALUES(19,'2026-12-06 23:50:49.083127','user','263b2b34505b42736ce6b0c5e7bd1438','run_created','run','b756173a0c6e8db6cffc6492e483c896',NULL,'{"agent":"pytest","title":"test run","via":"token:64d347e2dd491c4bee22ea373bd29e00"}','b2519539ce0f121cf5e7bd9d95fd8d0d',NULL,NULL,NULL,'bf3cfc7716639d952bb41fb303d8bf24f7b0f47e8f9cb5c393e597efd680bfba','7b8bafcb9193d61a8bdb3fa2e296deafebfba62f02abc4e67499b6ab42b6b745');
INSERT INTO "audit_event" VALUES(20,'2026-12-06 23:50:49.106236','user','263b2b34505b42736ce6b0c5e7bd1438','call_started','call','2c929512609097531836c6fabdf8c116','2c929512609097531836c6fabdf8c116','{"method":"tools/call","params":{"arguments":{"topic":"upgrade"},"name":"two_rounds"},"server":"mrtr","via":"token:64d347e2dd491c4bee22ea373bd29e00"}','b2519539ce0f121cf5e7bd9d95fd8d0d','mrtr','two_rounds',NULL,'7b8bafcb9193d61a8bdb3fa2e296deafebfba62f02abc4e67499b6ab42b6b745','636ff931cbdf201743314f52d5a63d59bcf16ed7ccd38c8fb34b8bdeb150a7eb');
INSERT INTO "audit_event" VALUES(21,'2026-12-06 23:50:49.114977','system',NULL,'request_sent','call','2c929512609097531836c6fabdf8c116','2c929512609097531836c6fabdf8c116','{"attempt":1,"job":"33cec6f3ea4a761b602337316c70dcc3","kind":"initial","responses":null}','b2519539ce0f121cf5e7bd9d95fd8d0d','mrtr','two_rounds',NULL,'636ff931cbdf201743314f52d5a63d59bcf16ed7ccd38c8fb34b8bdeb150a7eb','0f19e8b4839b0ccbeb388050f55a46506d028f7fcb4e9c27dabda9574783d939');
INSERT INTO "audit_event" VALUES(22,'2026-12-06 23:50:49.136005','system',NULL,'round_received','round','0fd6ac30542358fb105382b3ecd92a61','2c929512609097531836c6fabdf8c116','{"input_requests":{"first":{"method":"elicitation/create","params":{"message":"About upgrade: what is your name?","mode":"form","requestedSchema":{"properties":{"name":{"title":"Name","type":"string"}},"required":["name"],"type":"object"}}}},"request_state":{"len":2,"sha256":"82f3e9c695dc6b8d1b11818d5701919e286de8d47f7c3eb3100c485f79e57828"},"round":1}','b2519539ce0f121cf5e7bd9d95fd8d0d','mrtr','two_rounds',NULL,'0f19e8b4839b0ccbeb388050f55a46506d028f7fcb4e9c27dabda9574783d939','b0ba1c080fa80afe5f301c5c1e87d13f212e6857af1380ef96dcf6474aaccb19');
INSERT INTO "audit_event" VALUES(23,'2026-12-06 23:50:49.183550','user','4165c768e96d2079aafe3134501c25ec','question_signed','elicitation','22f962fb9ca74e1053e9847d67be736c','2c929512609097531836c6fabdf8c116','{"approvals":1,"content":{"name":"Ada"},"content_digest":"88bab6d8f6dc68a877064d584cbb5b6c50e74f617ea50d81d3a53c2ee6ffbc4f","digest":"6d59066458a3e16e699e90c2e2f8abde271ff155fc27dfd773dc70c8062b2626","key":"first","required":2,"via":"token:861df88df4485951830aa2c401bcb97e"}','b2519539ce0f121cf5e7bd9d95fd8d0d','mrtr','two_rounds','accept','b0ba1c080fa80afe5f301c5c1e87d13f212e6857af1380ef96dcf6474aaccb19','b098dc1d49ee803c25f8cff93ce8d94c890aacf6303bb045eb08f1ce3a311f0f');
CREATE TABLE audit_head (
	id INTEGER NOT NULL, 
	seq INTEGER NOT NULL, 
	hash VARCHAR(64) NOT NULL, 
	checkpoint_seq INTEGER NOT NULL, 
	checkpoint_at DATETIME, 
	checkpoint_signature VARCHAR(100) NOT NULL, 
	CONSTRAINT pk_audit_head PRIMARY KEY (id)
);
INSERT INTO "audit_head" VALUES(1,23,'b098dc1d49ee803c25f8cff93ce8d94c890aacf6303bb045eb08f1ce3a311f0f',0,NULL,'');
CREATE TABLE call (
	id VARCHAR(32) NOT NULL, 
	run_id VARCHAR(32) NOT NULL, 
	server_id VARCHAR(32) NOT NULL, 
	method VARCHAR(30) NOT NULL, 
	params_json TEXT NOT NULL, 
	status VARCHAR(20) NOT NULL, 
	round INTEGER NOT NULL, 
	restarts INTEGER NOT NULL, 
	result_json TEXT, 
	error_json TEXT, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, tool_annotations_json TEXT, relayed_json TEXT, 
	CONSTRAINT pk_call PRIMARY KEY (id), 
	CONSTRAINT fk_call_run_id_run FOREIGN KEY(run_id) REFERENCES run (id), 
	CONSTRAINT fk_call_server_id_mcp_server FOREIGN KEY(server_id) REFERENCES mcp_server (id)
);
INSERT INTO "call" VALUES('025783d306f8ee67bfd2ebce8c9e9f6f','cdefec6ac8a347be20c431b849b5f006','02e9352032ddbae0dc658d9dfa38bd1f','tools/call','{"name":"echo_state","arguments":{"state":"kept across the upgrade"}}','awaiting_input',1,0,NULL,NULL,'2026-12-06 23:50:48.974130','2026-12-06 23:50:49.040914',NULL,NULL);
INSERT INTO "call" VALUES('2c929512609097531836c6fabdf8c116','b756173a0c6e8db6cffc6492e483c896','02e9352032ddbae0dc658d9dfa38bd1f','tools/call','{"name":"two_rounds","arguments":{"topic":"upgrade"}}','awaiting_input',1,0,NULL,NULL,'2026-12-06 23:50:49.101197','2026-12-06 23:50:49.130059',NULL,NULL);
CREATE TABLE call_round (
	id VARCHAR(32) NOT NULL, 
	call_id VARCHAR(32) NOT NULL, 
	n INTEGER NOT NULL, 
	input_requests_json TEXT NOT NULL, 
	request_state_json TEXT, 
	status VARCHAR(20) NOT NULL, 
	error_json TEXT, 
	created_at DATETIME NOT NULL, 
	CONSTRAINT pk_call_round PRIMARY KEY (id), 
	CONSTRAINT fk_call_round_call_id_call FOREIGN KEY(call_id) REFERENCES call (id), 
	CONSTRAINT uq_call_round_call_id UNIQUE (call_id, n)
);
INSERT INTO "call_round" VALUES('d3d96226c487dede130a662b80b149dc','025783d306f8ee67bfd2ebce8c9e9f6f',1,'{"go":{"method":"elicitation/create","params":{"mode":"form","message":"Echo test: continue?","requestedSchema":{"properties":{"ok":{"type":"boolean","title":"OK"}},"type":"object"}}}}','"kept across the upgrade"','open',NULL,'2026-12-06 23:50:49.039202');
INSERT INTO "call_round" VALUES('0fd6ac30542358fb105382b3ecd92a61','2c929512609097531836c6fabdf8c116',1,'{"first":{"method":"elicitation/create","params":{"mode":"form","message":"About upgrade: what is your name?","requestedSchema":{"properties":{"name":{"type":"string","title":"Name"}},"required":["name"],"type":"object"}}}}','"r1"','open',NULL,'2026-12-06 23:50:49.129326');
CREATE TABLE dispatch_job (
	id VARCHAR(32) NOT NULL, 
	call_id VARCHAR(32) NOT NULL, 
	round_id VARCHAR(32), 
	kind VARCHAR(10) NOT NULL, 
	restart_of VARCHAR(32), 
	status VARCHAR(12) NOT NULL, 
	attempts INTEGER NOT NULL, 
	not_before DATETIME NOT NULL, 
	lease_until DATETIME, 
	claimed_by VARCHAR(64), 
	last_error TEXT, 
	created_at DATETIME NOT NULL, 
	CONSTRAINT pk_dispatch_job PRIMARY KEY (id), 
	CONSTRAINT fk_dispatch_job_call_id_call FOREIGN KEY(call_id) REFERENCES call (id), 
	CONSTRAINT fk_dispatch_job_round_id_call_round FOREIGN KEY(round_id) REFERENCES call_round (id), 
	CONSTRAINT uq_dispatch_job_round_id UNIQUE (round_id)
);
INSERT INTO "dispatch_job" VALUES('0d039e17ec478322ea06ab7ea316bc61','025783d306f8ee67bfd2ebce8c9e9f6f',NULL,'initial',NULL,'done',1,'2026-12-06 23:50:48.975861',NULL,'22236-6c63d6cd',NULL,'2026-12-06 23:50:48.975864');
INSERT INTO "dispatch_job" VALUES('33cec6f3ea4a761b602337316c70dcc3','2c929512609097531836c6fabdf8c116',NULL,'initial',NULL,'done',1,'2026-12-06 23:50:49.101916',NULL,'22236-6c63d6cd',NULL,'2026-12-06 23:50:49.101917');
CREATE TABLE "elicitation" (
	id VARCHAR(32) NOT NULL, 
	round_id VARCHAR(32) NOT NULL, 
	call_id VARCHAR(32) NOT NULL, 
	team_id VARCHAR(32) NOT NULL, 
	owner_id VARCHAR(32) NOT NULL, 
	"key" TEXT NOT NULL, 
	mode VARCHAR(10) NOT NULL, 
	message TEXT NOT NULL, 
	schema_json TEXT, 
	url TEXT, 
	request_digest VARCHAR(64) NOT NULL, 
	digest VARCHAR(64) NOT NULL, 
	status VARCHAR(20) NOT NULL, 
	content_json TEXT, 
	decided_by VARCHAR(32), 
	decided_at DATETIME, 
	reapplied_from VARCHAR(32), 
	expires_at DATETIME NOT NULL, 
	created_at DATETIME NOT NULL, 
	answerers VARCHAR(20) DEFAULT 'owner_or_approvers' NOT NULL, 
	no_self_approval BOOLEAN DEFAULT 0 NOT NULL, 
	required_approvals INTEGER DEFAULT '1' NOT NULL, 
	step_up_minutes INTEGER, 
	expiry_action VARCHAR(10) DEFAULT 'cancel' NOT NULL, 
	policy_json TEXT DEFAULT '[]' NOT NULL, 
	content_digest VARCHAR(64), decided_via VARCHAR(80), 
	CONSTRAINT pk_elicitation PRIMARY KEY (id), 
	CONSTRAINT fk_elicitation_decided_by_identity_user FOREIGN KEY(decided_by) REFERENCES identity_user (id), 
	CONSTRAINT fk_elicitation_team_id_identity_team FOREIGN KEY(team_id) REFERENCES identity_team (id), 
	CONSTRAINT fk_elicitation_owner_id_identity_user FOREIGN KEY(owner_id) REFERENCES identity_user (id), 
	CONSTRAINT fk_elicitation_round_id_call_round FOREIGN KEY(round_id) REFERENCES call_round (id), 
	CONSTRAINT fk_elicitation_call_id_call FOREIGN KEY(call_id) REFERENCES call (id)
);
INSERT INTO "elicitation" VALUES('4b62d1d88b4177d66968df8fe168a094','d3d96226c487dede130a662b80b149dc','025783d306f8ee67bfd2ebce8c9e9f6f','b2519539ce0f121cf5e7bd9d95fd8d0d','263b2b34505b42736ce6b0c5e7bd1438','go','form','Echo test: continue?','{"properties": {"ok": {"type": "boolean", "title": "OK"}}, "type": "object"}',NULL,'2a99c6246a9ba0930621034c5068520df9e8750f3d24ebdec2d3e0c1a9058aa4','dd686294416a2c5fcaeceb6e63d09741d5090f3bf26f45b7db2d367cafa62e46','pending',NULL,NULL,NULL,NULL,'2036-12-03 23:50:49.046587','2026-12-06 23:50:49.047873','owner_or_approvers',0,1,NULL,'cancel','{"applied": [], "destructive": true}',NULL,NULL);
INSERT INTO "elicitation" VALUES('22f962fb9ca74e1053e9847d67be736c','0fd6ac30542358fb105382b3ecd92a61','2c929512609097531836c6fabdf8c116','b2519539ce0f121cf5e7bd9d95fd8d0d','263b2b34505b42736ce6b0c5e7bd1438','first','form','About upgrade: what is your name?','{"properties": {"name": {"type": "string", "title": "Name"}}, "required": ["name"], "type": "object"}',NULL,'d3f053eb725b3c268e72c6317c8d2626696369b32400cf4b71af72e2ae31788d','6d59066458a3e16e699e90c2e2f8abde271ff155fc27dfd773dc70c8062b2626','pending','{"name":"Ada"}',NULL,NULL,NULL,'2036-12-03 23:50:49.134717','2026-12-06 23:50:49.135130','owner_or_approvers',0,2,NULL,'cancel','{"applied": [{"from": "tool rule two_rounds", "set": {"required_approvals": 2}}], "destructive": true}','88bab6d8f6dc68a877064d584cbb5b6c50e74f617ea50d81d3a53c2ee6ffbc4f',NULL);
CREATE TABLE elicitation_signature (
	id VARCHAR(32) NOT NULL, 
	elicitation_id VARCHAR(32) NOT NULL, 
	user_id VARCHAR(32) NOT NULL, 
	action VARCHAR(10) NOT NULL, 
	content_digest VARCHAR(64), 
	via VARCHAR(60), 
	signed_at DATETIME NOT NULL, 
	CONSTRAINT pk_elicitation_signature PRIMARY KEY (id), 
	CONSTRAINT fk_elicitation_signature_elicitation_id_elicitation FOREIGN KEY(elicitation_id) REFERENCES elicitation (id), 
	CONSTRAINT fk_elicitation_signature_user_id_identity_user FOREIGN KEY(user_id) REFERENCES identity_user (id), 
	CONSTRAINT uq_elicitation_signature_elicitation_id UNIQUE (elicitation_id, user_id)
);
INSERT INTO "elicitation_signature" VALUES('0fb7f6a4207931dd3a2ef972c2f1be72','22f962fb9ca74e1053e9847d67be736c','4165c768e96d2079aafe3134501c25ec','accept','88bab6d8f6dc68a877064d584cbb5b6c50e74f617ea50d81d3a53c2ee6ffbc4f','token:861df88df4485951830aa2c401bcb97e','2026-12-06 23:50:49.173865');
CREATE TABLE identity_api_token (
	id VARCHAR(32) NOT NULL, 
	user_id VARCHAR(32) NOT NULL, 
	team_id VARCHAR(32) NOT NULL, 
	name VARCHAR(100) NOT NULL, 
	token_hash VARCHAR(64) NOT NULL, 
	created_at DATETIME NOT NULL, 
	last_used_at DATETIME, 
	revoked_at DATETIME, 
	CONSTRAINT pk_identity_api_token PRIMARY KEY (id), 
	CONSTRAINT fk_identity_api_token_team_id_identity_team FOREIGN KEY(team_id) REFERENCES identity_team (id), 
	CONSTRAINT fk_identity_api_token_user_id_identity_user FOREIGN KEY(user_id) REFERENCES identity_user (id), 
	CONSTRAINT uq_identity_api_token_token_hash UNIQUE (token_hash)
);
INSERT INTO "identity_api_token" VALUES('64d347e2dd491c4bee22ea373bd29e00','263b2b34505b42736ce6b0c5e7bd1438','b2519539ce0f121cf5e7bd9d95fd8d0d','cli','0a10460d7f6c06050136b726446f9714a7222fb6af9c07d5be732374e6608f38','2026-12-06 23:50:46.218077','2026-12-06 23:50:47.490924',NULL);
INSERT INTO "identity_api_token" VALUES('861df88df4485951830aa2c401bcb97e','4165c768e96d2079aafe3134501c25ec','b2519539ce0f121cf5e7bd9d95fd8d0d','cli','cbf45b8be3ce5b6ed6c20388997c465d9b14c5bd2810062e41f1081741c2d54c','2026-12-06 23:50:46.479735','2026-12-06 23:50:49.150622',NULL);
INSERT INTO "identity_api_token" VALUES('8aef75bbcf1596eba2f1e8f501b1f1a2','671db1cf38e5496fbfb761c4df52400a','b2519539ce0f121cf5e7bd9d95fd8d0d','cli','7ce249f4503a89da53e8df86e8a03428cbf088de38bd195d874426b0e996a958','2026-12-06 23:50:46.753308',NULL,NULL);
INSERT INTO "identity_api_token" VALUES('e3bce6c7d0c5c8c301cef15c3b099a75','a4592cdb3e92528b2e9083de1f69b9a3','b2519539ce0f121cf5e7bd9d95fd8d0d','cli','0d15e2791b4c749115245c466e6643ca3ea78dc39a59458acd0d8da454076a1e','2026-12-06 23:50:47.009885',NULL,NULL);
INSERT INTO "identity_api_token" VALUES('4f14d7801f0b9db2e0e265c8f014c406','d62575bfbaa2005652b1429bb25fb3cf','3745f33a3338afab3eedf326f79b1ea5','cli','a7ad17b3ea6f43a849f133830d917e1c4189a7d8f75ef88d9aa5bb1b6e070233','2026-12-06 23:50:47.247312',NULL,NULL);
CREATE TABLE identity_login_failure (
	id VARCHAR(32) NOT NULL, 
	"key" VARCHAR(200) NOT NULL, 
	at DATETIME NOT NULL, 
	CONSTRAINT pk_identity_login_failure PRIMARY KEY (id)
);
CREATE TABLE identity_membership (
	id VARCHAR(32) NOT NULL, 
	user_id VARCHAR(32) NOT NULL, 
	team_id VARCHAR(32) NOT NULL, 
	role VARCHAR(20) NOT NULL, source VARCHAR(20) DEFAULT 'manual' NOT NULL, 
	CONSTRAINT pk_identity_membership PRIMARY KEY (id), 
	CONSTRAINT fk_identity_membership_team_id_identity_team FOREIGN KEY(team_id) REFERENCES identity_team (id), 
	CONSTRAINT fk_identity_membership_user_id_identity_user FOREIGN KEY(user_id) REFERENCES identity_user (id), 
	CONSTRAINT uq_identity_membership_user_id UNIQUE (user_id, team_id)
);
INSERT INTO "identity_membership" VALUES('b4924984dfe964d2d45289577a35df30','263b2b34505b42736ce6b0c5e7bd1438','b2519539ce0f121cf5e7bd9d95fd8d0d','member','manual');
INSERT INTO "identity_membership" VALUES('609879433d988c0717ae877002637272','4165c768e96d2079aafe3134501c25ec','b2519539ce0f121cf5e7bd9d95fd8d0d','approver','manual');
INSERT INTO "identity_membership" VALUES('a7b27d86e6c5f8f0cb2c84b9cf4b68e9','671db1cf38e5496fbfb761c4df52400a','b2519539ce0f121cf5e7bd9d95fd8d0d','approver','manual');
INSERT INTO "identity_membership" VALUES('9e3a5acf1f778719cd4fda7fe6cea7b3','a4592cdb3e92528b2e9083de1f69b9a3','b2519539ce0f121cf5e7bd9d95fd8d0d','auditor','manual');
INSERT INTO "identity_membership" VALUES('e311131e441a869ccdbc71626d81618e','d62575bfbaa2005652b1429bb25fb3cf','3745f33a3338afab3eedf326f79b1ea5','approver','manual');
CREATE TABLE identity_oidc_login (
	id VARCHAR(64) NOT NULL, 
	nonce VARCHAR(100) NOT NULL, 
	code_verifier VARCHAR(200) NOT NULL, 
	next_path TEXT NOT NULL, 
	web_session_id VARCHAR(64), 
	created_at DATETIME NOT NULL, 
	CONSTRAINT pk_identity_oidc_login PRIMARY KEY (id)
);
CREATE TABLE identity_server_credential (
	id VARCHAR(32) NOT NULL, 
	user_id VARCHAR(32) NOT NULL, 
	server_id VARCHAR(32) NOT NULL, 
	kind VARCHAR(20) NOT NULL, 
	sealed TEXT NOT NULL, 
	details_json TEXT NOT NULL, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	CONSTRAINT pk_identity_server_credential PRIMARY KEY (id), 
	CONSTRAINT fk_identity_server_credential_server_id_mcp_server FOREIGN KEY(server_id) REFERENCES mcp_server (id), 
	CONSTRAINT fk_identity_server_credential_user_id_identity_user FOREIGN KEY(user_id) REFERENCES identity_user (id), 
	CONSTRAINT uq_identity_server_credential_user_id UNIQUE (user_id, server_id)
);
CREATE TABLE identity_team (
	id VARCHAR(32) NOT NULL, 
	name VARCHAR(100) NOT NULL, 
	created_at DATETIME NOT NULL, 
	CONSTRAINT pk_identity_team PRIMARY KEY (id), 
	CONSTRAINT uq_identity_team_name UNIQUE (name)
);
INSERT INTO "identity_team" VALUES('b2519539ce0f121cf5e7bd9d95fd8d0d','platform','2026-12-06 23:50:45.898894');
INSERT INTO "identity_team" VALUES('3745f33a3338afab3eedf326f79b1ea5','elsewhere','2026-12-06 23:50:45.935433');
CREATE TABLE "identity_user" (
	id VARCHAR(32) NOT NULL, 
	name VARCHAR(100) NOT NULL, 
	password_hash VARCHAR(300), 
	created_at DATETIME NOT NULL, 
	site_admin BOOLEAN DEFAULT 0 NOT NULL, 
	oidc_issuer VARCHAR(500), 
	oidc_subject VARCHAR(255), 
	CONSTRAINT pk_identity_user PRIMARY KEY (id), 
	CONSTRAINT uq_identity_user_name UNIQUE (name), 
	CONSTRAINT uq_identity_user_oidc_issuer UNIQUE (oidc_issuer, oidc_subject)
);
INSERT INTO "identity_user" VALUES('263b2b34505b42736ce6b0c5e7bd1438','dev','scrypt$32768$8$1$K5mR_6PAoR871uc4c1lyTA$ObCKqpZjFz77qslbsaq7jO9F3un_watD2Otu4OpoFLY','2026-12-06 23:50:46.177228',0,NULL,NULL);
INSERT INTO "identity_user" VALUES('4165c768e96d2079aafe3134501c25ec','lead','scrypt$32768$8$1$683uZy5tvSjl_hkyecUNwg$q8cXPuzNEsOHQqn9F4Sl5ufFCmMtnRtWJmHcKIrjMLg','2026-12-06 23:50:46.454547',0,NULL,NULL);
INSERT INTO "identity_user" VALUES('671db1cf38e5496fbfb761c4df52400a','lead2','scrypt$32768$8$1$BMpkjlYoX9CnBDdb5K903Q$-oCM_qlUUlzSCbjB2iocVAxtw5c7gI81r5wQAB64_yw','2026-12-06 23:50:46.721831',0,NULL,NULL);
INSERT INTO "identity_user" VALUES('a4592cdb3e92528b2e9083de1f69b9a3','viewer','scrypt$32768$8$1$XWH8T_yjdo69AxlFWbEftQ$1VAKd79OnQ3eexMKs31WFmhsI3d9rKrCIe_pxm0JDNY','2026-12-06 23:50:46.990388',0,NULL,NULL);
INSERT INTO "identity_user" VALUES('d62575bfbaa2005652b1429bb25fb3cf','outsider','scrypt$32768$8$1$R-9A70eeAAL7N_Yj0z7Mrw$vhi5N-vGGgIi4ZLt8aeu7mMCUiJ50s5Aj-hygJx5wqM','2026-12-06 23:50:47.222448',0,NULL,NULL);
CREATE TABLE "identity_web_session" (
	id VARCHAR(64) NOT NULL, 
	user_id VARCHAR(32) NOT NULL, 
	csrf_token VARCHAR(64) NOT NULL, 
	created_at DATETIME NOT NULL, 
	last_seen_at DATETIME NOT NULL, 
	revoked_at DATETIME, 
	authenticated_at DATETIME NOT NULL, 
	auth_method VARCHAR(20) DEFAULT 'password' NOT NULL, kept_form_for VARCHAR(100), kept_form_json TEXT, kept_form_at DATETIME, 
	CONSTRAINT pk_identity_web_session PRIMARY KEY (id), 
	CONSTRAINT fk_identity_web_session_user_id_identity_user FOREIGN KEY(user_id) REFERENCES identity_user (id)
);
CREATE TABLE "mcp_server" (
	id VARCHAR(32) NOT NULL, 
	team_id VARCHAR(32) NOT NULL, 
	name VARCHAR(100) NOT NULL, 
	transport VARCHAR(10) NOT NULL, 
	command_json TEXT, 
	env_json TEXT NOT NULL, 
	url TEXT, 
	headers_json TEXT NOT NULL, 
	trusted BOOLEAN NOT NULL, 
	idempotent BOOLEAN NOT NULL, 
	disabled BOOLEAN NOT NULL, 
	created_at DATETIME NOT NULL, 
	credential_mode VARCHAR(10) DEFAULT 'shared' NOT NULL, 
	credential_name VARCHAR(100), 
	internal BOOLEAN DEFAULT 0 NOT NULL, protocol_version VARCHAR(20), 
	CONSTRAINT pk_mcp_server PRIMARY KEY (id), 
	CONSTRAINT fk_mcp_server_team_id_identity_team FOREIGN KEY(team_id) REFERENCES identity_team (id), 
	CONSTRAINT uq_mcp_server_team_id UNIQUE (team_id, name)
);
INSERT INTO "mcp_server" VALUES('02e9352032ddbae0dc658d9dfa38bd1f','b2519539ce0f121cf5e7bd9d95fd8d0d','mrtr','stdio','["python", "tests/servers/mrtr_server.py"]','{"MRTR_LOG": {"sealed": "fkX4l+7QTWXmDkYEFehAJgyf1p7La4+lfw7xlQyVFagpG6dzrDabFhjR"}}',NULL,'{}',0,0,0,'2026-12-06 23:50:47.275454','shared',NULL,1,'2026-07-28');
CREATE TABLE policy_rule (
	id VARCHAR(32) NOT NULL, 
	team_id VARCHAR(32) NOT NULL, 
	scope VARCHAR(12) NOT NULL, 
	server_id VARCHAR(32), 
	tool_pattern VARCHAR(200), 
	scope_key VARCHAR(300) NOT NULL, 
	answerers VARCHAR(20), 
	no_self_approval BOOLEAN, 
	required_approvals INTEGER, 
	expiry_minutes INTEGER, 
	expiry_action VARCHAR(10), 
	step_up_minutes INTEGER, 
	updated_by VARCHAR(32), 
	updated_at DATETIME NOT NULL, 
	CONSTRAINT pk_policy_rule PRIMARY KEY (id), 
	CONSTRAINT fk_policy_rule_team_id_identity_team FOREIGN KEY(team_id) REFERENCES identity_team (id), 
	CONSTRAINT fk_policy_rule_server_id_mcp_server FOREIGN KEY(server_id) REFERENCES mcp_server (id), 
	CONSTRAINT fk_policy_rule_updated_by_identity_user FOREIGN KEY(updated_by) REFERENCES identity_user (id), 
	CONSTRAINT uq_policy_rule_team_id UNIQUE (team_id, scope_key)
);
INSERT INTO "policy_rule" VALUES('17165fcbe66c988ff2b52dfc428d9020','b2519539ce0f121cf5e7bd9d95fd8d0d','tool',NULL,'two_rounds','tool:*:two_rounds',NULL,NULL,2,NULL,NULL,NULL,NULL,'2026-12-06 23:50:47.354459');
CREATE TABLE "run" (
	id VARCHAR(32) NOT NULL, 
	team_id VARCHAR(32) NOT NULL, 
	owner_id VARCHAR(32) NOT NULL, 
	agent VARCHAR(200) NOT NULL, 
	title VARCHAR(500) NOT NULL, 
	created_at DATETIME NOT NULL, 
	gateway_key VARCHAR(300), 
	CONSTRAINT pk_run PRIMARY KEY (id), 
	CONSTRAINT fk_run_team_id_identity_team FOREIGN KEY(team_id) REFERENCES identity_team (id), 
	CONSTRAINT fk_run_owner_id_identity_user FOREIGN KEY(owner_id) REFERENCES identity_user (id), 
	CONSTRAINT uq_run_team_id UNIQUE (team_id, gateway_key)
);
INSERT INTO "run" VALUES('cdefec6ac8a347be20c431b849b5f006','b2519539ce0f121cf5e7bd9d95fd8d0d','263b2b34505b42736ce6b0c5e7bd1438','pytest','test run','2026-12-06 23:50:47.504042',NULL);
INSERT INTO "run" VALUES('b756173a0c6e8db6cffc6492e483c896','b2519539ce0f121cf5e7bd9d95fd8d0d','263b2b34505b42736ce6b0c5e7bd1438','pytest','test run','2026-12-06 23:50:49.082134',NULL);
CREATE INDEX ix_audit_event_action ON audit_event (action);
CREATE INDEX ix_audit_event_call_id ON audit_event (call_id);
CREATE INDEX ix_audit_event_subject_id ON audit_event (subject_id);
CREATE INDEX ix_identity_api_token_user_id ON identity_api_token (user_id);
CREATE INDEX ix_identity_membership_team_id ON identity_membership (team_id);
CREATE INDEX ix_identity_membership_user_id ON identity_membership (user_id);
CREATE INDEX ix_call_run_id ON call (run_id);
CREATE INDEX ix_call_status ON call (status);
CREATE INDEX ix_call_round_call_id ON call_round (call_id);
CREATE INDEX ix_dispatch_job_call_id ON dispatch_job (call_id);
CREATE INDEX ix_dispatch_job_due ON dispatch_job (status, not_before);
CREATE TRIGGER audit_event_no_update BEFORE UPDATE ON audit_event BEGIN SELECT RAISE(ABORT, 'audit_event is append-only'); END;
CREATE TRIGGER audit_event_no_delete BEFORE DELETE ON audit_event BEGIN SELECT RAISE(ABORT, 'audit_event is append-only'); END;
CREATE INDEX ix_identity_login_failure_key_at ON identity_login_failure ("key", at);
CREATE INDEX ix_identity_server_credential_user_id ON identity_server_credential (user_id);
CREATE INDEX ix_identity_web_session_user_id ON identity_web_session (user_id);
CREATE INDEX ix_elicitation_call_id ON elicitation (call_id);
CREATE INDEX ix_elicitation_round_id ON elicitation (round_id);
CREATE INDEX ix_elicitation_inbox ON elicitation (status, team_id, created_at);
CREATE INDEX ix_elicitation_owner_id ON elicitation (owner_id);
CREATE INDEX ix_elicitation_signature_elicitation_id ON elicitation_signature (elicitation_id);
CREATE INDEX ix_audit_event_team_id ON audit_event (team_id);
CREATE TRIGGER audit_checkpoint_no_update BEFORE UPDATE ON audit_checkpoint BEGIN SELECT RAISE(ABORT, 'audit_checkpoint is append-only'); END;
CREATE TRIGGER audit_checkpoint_no_delete BEFORE DELETE ON audit_checkpoint BEGIN SELECT RAISE(ABORT, 'audit_checkpoint is append-only'); END;
CREATE INDEX ix_elicitation_decided ON elicitation (team_id, decided_at);
CREATE INDEX ix_mcp_server_team_id ON mcp_server (team_id);
CREATE INDEX ix_run_team_created ON run (team_id, created_at);
CREATE INDEX ix_run_owner_id ON run (owner_id);
CREATE INDEX ix_run_team_id ON run (team_id);
CREATE INDEX ix_agent_request_call_id ON agent_request (call_id);
CREATE INDEX ix_agent_request_round_id ON agent_request (round_id);
COMMIT;
