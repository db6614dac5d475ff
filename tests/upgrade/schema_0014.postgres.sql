--
-- PostgreSQL database dump
--

\restrict gbROpRW57fSwEwhwukGenQ9B72QmnRFYs9iGOasdtQB2Xq7F2fkN3529ASvAo2D

-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: audit_checkpoint_append_only(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.audit_checkpoint_append_only() RETURNS trigger
    LANGUAGE plpgsql
    AS $$ BEGIN RAISE EXCEPTION 'audit_checkpoint is append-only'; END $$;


--
-- Name: audit_event_append_only(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.audit_event_append_only() RETURNS trigger
    LANGUAGE plpgsql
    AS $$ BEGIN RAISE EXCEPTION 'audit_event is append-only'; END $$;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: agent_request; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.agent_request (
    id character varying(32) NOT NULL,
    round_id character varying(32) NOT NULL,
    call_id character varying(32) NOT NULL,
    owner_id character varying(32) NOT NULL,
    key text NOT NULL,
    method character varying(40) NOT NULL,
    params_json text NOT NULL,
    status character varying(20) NOT NULL,
    response_json text,
    answered_at timestamp with time zone,
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: alembic_version; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.alembic_version (
    version_num character varying(32) NOT NULL
);


--
-- Name: audit_checkpoint; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.audit_checkpoint (
    seq bigint NOT NULL,
    hash character varying(64) NOT NULL,
    at timestamp with time zone NOT NULL,
    prev_signature character varying(100) NOT NULL,
    key_id character varying(16) NOT NULL,
    signature character varying(100) NOT NULL
);


--
-- Name: audit_event; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.audit_event (
    seq bigint NOT NULL,
    at timestamp with time zone NOT NULL,
    actor_type character varying(10) NOT NULL,
    actor_id character varying(32),
    action character varying(50) NOT NULL,
    subject_type character varying(20) NOT NULL,
    subject_id character varying(32) NOT NULL,
    call_id character varying(32),
    payload_json text NOT NULL,
    team_id character varying(32),
    server character varying(100),
    tool text,
    outcome character varying(20),
    prev_hash character varying(64),
    hash character varying(64)
);


--
-- Name: audit_event_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.audit_event_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: audit_event_seq_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.audit_event_seq_seq OWNED BY public.audit_event.seq;


--
-- Name: audit_head; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.audit_head (
    id integer NOT NULL,
    seq bigint NOT NULL,
    hash character varying(64) NOT NULL,
    checkpoint_seq bigint NOT NULL,
    checkpoint_at timestamp with time zone,
    checkpoint_signature character varying(100) NOT NULL
);


--
-- Name: call; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.call (
    id character varying(32) NOT NULL,
    run_id character varying(32) NOT NULL,
    server_id character varying(32) NOT NULL,
    method character varying(30) NOT NULL,
    params_json text NOT NULL,
    status character varying(20) NOT NULL,
    round integer NOT NULL,
    restarts integer NOT NULL,
    result_json text,
    error_json text,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    tool_annotations_json text,
    relayed_json text
);


--
-- Name: call_round; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.call_round (
    id character varying(32) NOT NULL,
    call_id character varying(32) NOT NULL,
    n integer NOT NULL,
    input_requests_json text NOT NULL,
    request_state_json text,
    status character varying(20) NOT NULL,
    error_json text,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: dispatch_job; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dispatch_job (
    id character varying(32) NOT NULL,
    call_id character varying(32) NOT NULL,
    round_id character varying(32),
    kind character varying(10) NOT NULL,
    restart_of character varying(32),
    status character varying(12) NOT NULL,
    attempts integer NOT NULL,
    not_before timestamp with time zone NOT NULL,
    lease_until timestamp with time zone,
    claimed_by character varying(64),
    last_error text,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: elicitation; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.elicitation (
    id character varying(32) NOT NULL,
    round_id character varying(32) NOT NULL,
    call_id character varying(32) NOT NULL,
    team_id character varying(32) NOT NULL,
    owner_id character varying(32) NOT NULL,
    key text NOT NULL,
    mode character varying(10) NOT NULL,
    message text NOT NULL,
    schema_json text,
    url text,
    request_digest character varying(64) NOT NULL,
    digest character varying(64) NOT NULL,
    status character varying(20) NOT NULL,
    content_json text,
    decided_by character varying(32),
    decided_at timestamp with time zone,
    reapplied_from character varying(32),
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone NOT NULL,
    answerers character varying(20) DEFAULT 'owner_or_approvers'::character varying NOT NULL,
    no_self_approval boolean DEFAULT false NOT NULL,
    required_approvals integer DEFAULT 1 NOT NULL,
    step_up_minutes integer,
    expiry_action character varying(10) DEFAULT 'cancel'::character varying NOT NULL,
    policy_json text DEFAULT '[]'::text NOT NULL,
    content_digest character varying(64),
    decided_via character varying(80)
);


--
-- Name: elicitation_signature; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.elicitation_signature (
    id character varying(32) NOT NULL,
    elicitation_id character varying(32) NOT NULL,
    user_id character varying(32) NOT NULL,
    action character varying(10) NOT NULL,
    content_digest character varying(64),
    via character varying(60),
    signed_at timestamp with time zone NOT NULL
);


--
-- Name: identity_api_token; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.identity_api_token (
    id character varying(32) NOT NULL,
    user_id character varying(32) NOT NULL,
    team_id character varying(32) NOT NULL,
    name character varying(100) NOT NULL,
    token_hash character varying(64) NOT NULL,
    created_at timestamp with time zone NOT NULL,
    last_used_at timestamp with time zone,
    revoked_at timestamp with time zone
);


--
-- Name: identity_login_failure; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.identity_login_failure (
    id character varying(32) NOT NULL,
    key character varying(200) NOT NULL,
    at timestamp with time zone NOT NULL
);


--
-- Name: identity_membership; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.identity_membership (
    id character varying(32) NOT NULL,
    user_id character varying(32) NOT NULL,
    team_id character varying(32) NOT NULL,
    role character varying(20) NOT NULL,
    source character varying(20) DEFAULT 'manual'::character varying NOT NULL
);


--
-- Name: identity_oidc_login; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.identity_oidc_login (
    id character varying(64) NOT NULL,
    nonce character varying(100) NOT NULL,
    code_verifier character varying(200) NOT NULL,
    next_path text NOT NULL,
    web_session_id character varying(64),
    created_at timestamp with time zone NOT NULL
);


--
-- Name: identity_server_credential; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.identity_server_credential (
    id character varying(32) NOT NULL,
    user_id character varying(32) NOT NULL,
    server_id character varying(32) NOT NULL,
    kind character varying(20) NOT NULL,
    sealed text NOT NULL,
    details_json text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL
);


--
-- Name: identity_team; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.identity_team (
    id character varying(32) NOT NULL,
    name character varying(100) NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: identity_user; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.identity_user (
    id character varying(32) NOT NULL,
    name character varying(100) NOT NULL,
    password_hash character varying(300),
    created_at timestamp with time zone NOT NULL,
    site_admin boolean DEFAULT false NOT NULL,
    oidc_issuer character varying(500),
    oidc_subject character varying(255)
);


--
-- Name: identity_web_session; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.identity_web_session (
    id character varying(64) NOT NULL,
    user_id character varying(32) NOT NULL,
    csrf_token character varying(64) NOT NULL,
    created_at timestamp with time zone NOT NULL,
    last_seen_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone,
    authenticated_at timestamp with time zone NOT NULL,
    auth_method character varying(20) DEFAULT 'password'::character varying NOT NULL,
    kept_form_for character varying(100),
    kept_form_json text,
    kept_form_at timestamp with time zone
);


--
-- Name: mcp_server; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.mcp_server (
    id character varying(32) NOT NULL,
    team_id character varying(32) NOT NULL,
    name character varying(100) NOT NULL,
    transport character varying(10) NOT NULL,
    command_json text,
    env_json text NOT NULL,
    url text,
    headers_json text NOT NULL,
    trusted boolean NOT NULL,
    idempotent boolean NOT NULL,
    disabled boolean NOT NULL,
    created_at timestamp with time zone NOT NULL,
    credential_mode character varying(10) DEFAULT 'shared'::character varying NOT NULL,
    credential_name character varying(100),
    internal boolean DEFAULT false NOT NULL,
    protocol_version character varying(20)
);


--
-- Name: policy_rule; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.policy_rule (
    id character varying(32) NOT NULL,
    team_id character varying(32) NOT NULL,
    scope character varying(12) NOT NULL,
    server_id character varying(32),
    tool_pattern character varying(200),
    scope_key character varying(300) NOT NULL,
    answerers character varying(20),
    no_self_approval boolean,
    required_approvals integer,
    expiry_minutes integer,
    expiry_action character varying(10),
    step_up_minutes integer,
    updated_by character varying(32),
    updated_at timestamp with time zone NOT NULL
);


--
-- Name: run; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.run (
    id character varying(32) NOT NULL,
    team_id character varying(32) NOT NULL,
    owner_id character varying(32) NOT NULL,
    agent character varying(200) NOT NULL,
    title character varying(500) NOT NULL,
    created_at timestamp with time zone NOT NULL,
    gateway_key character varying(300)
);


--
-- Name: audit_event seq; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit_event ALTER COLUMN seq SET DEFAULT nextval('public.audit_event_seq_seq'::regclass);


--
-- Data for Name: agent_request; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: alembic_version; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.alembic_version VALUES ('0014');


--
-- Data for Name: audit_checkpoint; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: audit_event; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.audit_event VALUES (1, '2026-12-06 23:50:55.991995+00', 'system', NULL, 'team_created', 'team', 'bfa6d147f818d1b5c50692ffb8379453', NULL, '{"name":"platform"}', 'bfa6d147f818d1b5c50692ffb8379453', NULL, NULL, NULL, '0000000000000000000000000000000000000000000000000000000000000000', 'c4c0c71747de517658dc67eb003973e4edbe83733d00414cacce27f1813be486');
INSERT INTO public.audit_event VALUES (2, '2026-12-06 23:50:56.027703+00', 'system', NULL, 'team_created', 'team', '0e882f5499187e3b381844a42296fb61', NULL, '{"name":"elsewhere"}', '0e882f5499187e3b381844a42296fb61', NULL, NULL, NULL, 'c4c0c71747de517658dc67eb003973e4edbe83733d00414cacce27f1813be486', 'bfdac0cecf02461fecd99658358f51ff14614bc1cf68b38e2c862670d1d982ed');
INSERT INTO public.audit_event VALUES (3, '2026-12-06 23:50:56.279669+00', 'system', NULL, 'membership_added', 'user', 'e9540efaf30e95154ada0687ff0e030c', NULL, '{"role":"member","team":"platform","user":"dev"}', NULL, NULL, NULL, NULL, 'bfdac0cecf02461fecd99658358f51ff14614bc1cf68b38e2c862670d1d982ed', 'd8d3fa85300615d81b385b300199f1c0237d3ce2d3ae334fde218727936ba209');
INSERT INTO public.audit_event VALUES (4, '2026-12-06 23:50:56.303401+00', 'system', NULL, 'token_created', 'token', '2db932444691116e4cdffaa7d98548b7', NULL, '{"name":"cli","team":"bfa6d147f818d1b5c50692ffb8379453","user":"e9540efaf30e95154ada0687ff0e030c"}', 'bfa6d147f818d1b5c50692ffb8379453', NULL, NULL, NULL, 'd8d3fa85300615d81b385b300199f1c0237d3ce2d3ae334fde218727936ba209', '88fb6643ef956c9c5af296c794e4606d797e57f3fcbfa92a096ec43bf19556da');
INSERT INTO public.audit_event VALUES (5, '2026-12-06 23:50:56.520795+00', 'system', NULL, 'membership_added', 'user', '47e49488859776526faeada305778dd2', NULL, '{"role":"approver","team":"platform","user":"lead"}', NULL, NULL, NULL, NULL, '88fb6643ef956c9c5af296c794e4606d797e57f3fcbfa92a096ec43bf19556da', 'e6a65ce9f57d4c562a9b80ca9af490b2219e5326503b0978cc1c35113c992b55');
INSERT INTO public.audit_event VALUES (6, '2026-12-06 23:50:56.547908+00', 'system', NULL, 'token_created', 'token', 'ad564fdd7b695d2890ec326b4add290b', NULL, '{"name":"cli","team":"bfa6d147f818d1b5c50692ffb8379453","user":"47e49488859776526faeada305778dd2"}', 'bfa6d147f818d1b5c50692ffb8379453', NULL, NULL, NULL, 'e6a65ce9f57d4c562a9b80ca9af490b2219e5326503b0978cc1c35113c992b55', '296ff9e4de344a4015eb0e0e5e1389f4963fc398d33dd1d03dfa4f96a173c111');
INSERT INTO public.audit_event VALUES (7, '2026-12-06 23:50:56.803321+00', 'system', NULL, 'membership_added', 'user', '75163b086bc0d5f22b1176ed67f6ee3f', NULL, '{"role":"approver","team":"platform","user":"lead2"}', NULL, NULL, NULL, NULL, '296ff9e4de344a4015eb0e0e5e1389f4963fc398d33dd1d03dfa4f96a173c111', '956c7275728a1d90cbfa5c627270712d54e4eb9f997408f9a33905d0e0d511ad');
INSERT INTO public.audit_event VALUES (8, '2026-12-06 23:50:56.838332+00', 'system', NULL, 'token_created', 'token', '94373909f65a8778a60a3e7b12d3e2b2', NULL, '{"name":"cli","team":"bfa6d147f818d1b5c50692ffb8379453","user":"75163b086bc0d5f22b1176ed67f6ee3f"}', 'bfa6d147f818d1b5c50692ffb8379453', NULL, NULL, NULL, '956c7275728a1d90cbfa5c627270712d54e4eb9f997408f9a33905d0e0d511ad', '42ed92eca2daec6335968ab526430d147cbc38deb8a14289f74aba13c37dc078');
INSERT INTO public.audit_event VALUES (9, '2026-12-06 23:50:57.112415+00', 'system', NULL, 'membership_added', 'user', '2afc4ce9bb988fb5d50bb6f8d399cb06', NULL, '{"role":"auditor","team":"platform","user":"viewer"}', NULL, NULL, NULL, NULL, '42ed92eca2daec6335968ab526430d147cbc38deb8a14289f74aba13c37dc078', '0ce8c486e0b4c787f62135539b4802c1540d24c4d70de09382a78dfeca42c421');
INSERT INTO public.audit_event VALUES (10, '2026-12-06 23:50:57.142722+00', 'system', NULL, 'token_created', 'token', '5691afa3242b573be7d6f0ba789ed249', NULL, '{"name":"cli","team":"bfa6d147f818d1b5c50692ffb8379453","user":"2afc4ce9bb988fb5d50bb6f8d399cb06"}', 'bfa6d147f818d1b5c50692ffb8379453', NULL, NULL, NULL, '0ce8c486e0b4c787f62135539b4802c1540d24c4d70de09382a78dfeca42c421', 'd34d8f2c16498d835a0dde980de19f387c17bb5abdcb27dc5bdd5966422a4f6f');
INSERT INTO public.audit_event VALUES (11, '2026-12-06 23:50:57.410694+00', 'system', NULL, 'membership_added', 'user', 'ad0d303cf31cbca468c70f1d1dc4fd83', NULL, '{"role":"approver","team":"elsewhere","user":"outsider"}', NULL, NULL, NULL, NULL, 'd34d8f2c16498d835a0dde980de19f387c17bb5abdcb27dc5bdd5966422a4f6f', '6f2d0a9de62a823ed0c250cd8c106030ba238222c4f3571ebf96d0d771407741');
INSERT INTO public.audit_event VALUES (12, '2026-12-06 23:50:57.435146+00', 'system', NULL, 'token_created', 'token', '897e09c71723b4f96561736b4833f8bd', NULL, '{"name":"cli","team":"0e882f5499187e3b381844a42296fb61","user":"ad0d303cf31cbca468c70f1d1dc4fd83"}', '0e882f5499187e3b381844a42296fb61', NULL, NULL, NULL, '6f2d0a9de62a823ed0c250cd8c106030ba238222c4f3571ebf96d0d771407741', '9bd621f684647f110c1b17339a041b1cab15eb13fe4dacda63ef1326ee9a3c61');
INSERT INTO public.audit_event VALUES (13, '2026-12-06 23:50:57.459241+00', 'system', NULL, 'server_added', 'server', '3e066fb139ce50cf3f8357d4fbbed005', NULL, '{"changed":["transport","command","env","headers","credential","trusted","idempotent","internal"],"env_names":["MRTR_LOG"],"header_names":[],"idempotent":false,"internal":true,"name":"mrtr","team":"platform","transport":"stdio","trusted":false,"where":"python tests/servers/mrtr_server.py"}', 'bfa6d147f818d1b5c50692ffb8379453', 'mrtr', NULL, NULL, '9bd621f684647f110c1b17339a041b1cab15eb13fe4dacda63ef1326ee9a3c61', 'bedcfc3344b68a76774dad12def25edeed062b28dbf6081432c53eccf4710a77');
INSERT INTO public.audit_event VALUES (14, '2026-12-06 23:50:57.574236+00', 'system', NULL, 'policy_changed', 'team', 'bfa6d147f818d1b5c50692ffb8379453', NULL, '{"after":{"answerers":null,"expiry_action":null,"expiry_minutes":null,"no_self_approval":null,"required_approvals":2,"step_up_minutes":null},"before":null,"scope":"tool:*:two_rounds"}', 'bfa6d147f818d1b5c50692ffb8379453', NULL, NULL, NULL, 'bedcfc3344b68a76774dad12def25edeed062b28dbf6081432c53eccf4710a77', '47a2abcce6a77a3643aeac31300b1532c61880e202b3ed12043629cd08197e3b');
INSERT INTO public.audit_event VALUES (15, '2026-12-06 23:50:57.685714+00', 'user', 'e9540efaf30e95154ada0687ff0e030c', 'run_created', 'run', '72e73cc87716a6cda7779984f3b352bd', NULL, '{"agent":"pytest","title":"test run","via":"token:2db932444691116e4cdffaa7d98548b7"}', 'bfa6d147f818d1b5c50692ffb8379453', NULL, NULL, NULL, '47a2abcce6a77a3643aeac31300b1532c61880e202b3ed12043629cd08197e3b', '94c7ad4f9b78a7b6975c66f5a998f5e730795e1529da90c65d466e8f3c400fb7');
INSERT INTO public.audit_event VALUES (16, '2026-12-06 23:50:59.612941+00', 'user', 'e9540efaf30e95154ada0687ff0e030c', 'call_started', 'call', 'fc7e31e1e65ca7a2bf3faae3a2f929e7', 'fc7e31e1e65ca7a2bf3faae3a2f929e7', '{"method":"tools/call","params":{"arguments":{"state":"kept across the upgrade"},"name":"echo_state"},"server":"mrtr","via":"token:2db932444691116e4cdffaa7d98548b7"}', 'bfa6d147f818d1b5c50692ffb8379453', 'mrtr', 'echo_state', NULL, '94c7ad4f9b78a7b6975c66f5a998f5e730795e1529da90c65d466e8f3c400fb7', '8b8ca73d8530bdf401e6ea35b2e815c011f96329da7ff5be19de1926cd259489');
INSERT INTO public.audit_event VALUES (17, '2026-12-06 23:50:59.968239+00', 'system', NULL, 'request_sent', 'call', 'fc7e31e1e65ca7a2bf3faae3a2f929e7', 'fc7e31e1e65ca7a2bf3faae3a2f929e7', '{"attempt":1,"job":"e1d436d0f40d6d926144b2c1e4fe14a7","kind":"initial","responses":null}', 'bfa6d147f818d1b5c50692ffb8379453', 'mrtr', 'echo_state', NULL, '8b8ca73d8530bdf401e6ea35b2e815c011f96329da7ff5be19de1926cd259489', 'd710f2df440cac21feaee340f2ef291e1bb85d586d356f55f680e00053907cc8');
INSERT INTO public.audit_event VALUES (18, '2026-12-06 23:51:00.078312+00', 'system', NULL, 'round_received', 'round', 'c81d01561a9f52f5101b7ac256e0eb8e', 'fc7e31e1e65ca7a2bf3faae3a2f929e7', '{"input_requests":{"go":{"method":"elicitation/create","params":{"message":"Echo test: continue?","mode":"form","requestedSchema":{"properties":{"ok":{"title":"OK","type":"boolean"}},"type":"object"}}}},"request_state":{"len":23,"sha256":"58a9e894a8fbb24c3c26d2a2cc914e58e05a055339fc84fc55ebe936b914b4c7"},"round":1}', 'bfa6d147f818d1b5c50692ffb8379453', 'mrtr', 'echo_state', NULL, 'd710f2df440cac21feaee340f2ef291e1bb85d586d356f55f680e00053907cc8', 'b9efe8f9bb2fe64a52043561dcdab6d69358808c4d472d4470a2c7234a322ad6');
INSERT INTO public.audit_event VALUES (19, '2026-12-06 23:51:00.140413+00', 'user', 'e9540efaf30e95154ada0687ff0e030c', 'run_created', 'run', '516ce628eec71e4198ffbd771cb027cb', NULL, '{"agent":"pytest","title":"test run","via":"token:2db932444691116e4cdffaa7d98548b7"}', 'bfa6d147f818d1b5c50692ffb8379453', NULL, NULL, NULL, 'b9efe8f9bb2fe64a52043561dcdab6d69358808c4d472d4470a2c7234a322ad6', '51edca38daf61d64b39bca40776fdfa9b1be76a6d9e38ed26762fd1aaf38aeb4');
INSERT INTO public.audit_event VALUES (20, '2026-12-06 23:51:00.21158+00', 'user', 'e9540efaf30e95154ada0687ff0e030c', 'call_started', 'call', '1900f91381f2ced2db077015def2c11a', '1900f91381f2ced2db077015def2c11a', '{"method":"tools/call","params":{"arguments":{"topic":"upgrade"},"name":"two_rounds"},"server":"mrtr","via":"token:2db932444691116e4cdffaa7d98548b7"}', 'bfa6d147f818d1b5c50692ffb8379453', 'mrtr', 'two_rounds', NULL, '51edca38daf61d64b39bca40776fdfa9b1be76a6d9e38ed26762fd1aaf38aeb4', '5d18a657eac1762425ea8585b1d088fe3a707257a7d293e764b4dc0515731c14');
INSERT INTO public.audit_event VALUES (21, '2026-12-06 23:51:00.24622+00', 'system', NULL, 'request_sent', 'call', '1900f91381f2ced2db077015def2c11a', '1900f91381f2ced2db077015def2c11a', '{"attempt":1,"job":"180490ea2290f5cd1bca000643ab0598","kind":"initial","responses":null}', 'bfa6d147f818d1b5c50692ffb8379453', 'mrtr', 'two_rounds', NULL, '5d18a657eac1762425ea8585b1d088fe3a707257a7d293e764b4dc0515731c14', 'c4cf0a4047a5e159b50a8d31456c20424f97112eacda33dbd51b755f6d49cec7');
INSERT INTO public.audit_event VALUES (23, '2026-12-06 23:51:00.495396+00', 'user', '47e49488859776526faeada305778dd2', 'question_signed', 'elicitation', '3ad35ca137b7b7517459071e9b182d5b', '1900f91381f2ced2db077015def2c11a', '{"approvals":1,"content":{"name":"Ada"},"content_digest":"88bab6d8f6dc68a877064d584cbb5b6c50e74f617ea50d81d3a53c2ee6ffbc4f","digest":"6d59066458a3e16e699e90c2e2f8abde271ff155fc27dfd773dc70c8062b2626","key":"first","required":2,"via":"token:ad564fdd7b695d2890ec326b4add290b"}', 'bfa6d147f818d1b5c50692ffb8379453', 'mrtr', 'two_rounds', 'accept', '695ff9c91e59b853671247fda897cac8df5c791164357c8e8dd82df0eab3ae2f', 'f5a2af85bad5349af7af8e76dbcd97c0fc7eb9a8e3513e5f39063006f1101aca');
INSERT INTO public.audit_event VALUES (22, '2026-12-06 23:51:00.322453+00', 'system', NULL, 'round_received', 'round', 'a6489345f61568f35647a1711a9c23d1', '1900f91381f2ced2db077015def2c11a', '{"input_requests":{"first":{"method":"elicitation/create","params":{"message":"About upgrade: what is your name?","mode":"form","requestedSchema":{"properties":{"name":{"title":"Name","type":"string"}},"required":["name"],"type":"object"}}}},"request_state":{"len":2,"sha256":"82f3e9c695dc6b8d1b11818d5701919e286de8d47f7c3eb3100c485f79e57828"},"round":1}', 'bfa6d147f818d1b5c50692ffb8379453', 'mrtr', 'two_rounds', NULL, 'c4cf0a4047a5e159b50a8d31456c20424f97112eacda33dbd51b755f6d49cec7', '695ff9c91e59b853671247fda897cac8df5c791164357c8e8dd82df0eab3ae2f');


--
-- Data for Name: audit_head; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.audit_head VALUES (1, 23, 'f5a2af85bad5349af7af8e76dbcd97c0fc7eb9a8e3513e5f39063006f1101aca', 0, NULL, '');


--
-- Data for Name: call; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.call VALUES ('fc7e31e1e65ca7a2bf3faae3a2f929e7', '72e73cc87716a6cda7779984f3b352bd', '3e066fb139ce50cf3f8357d4fbbed005', 'tools/call', '{"name":"echo_state","arguments":{"state":"kept across the upgrade"}}', 'awaiting_input', 1, 0, NULL, NULL, '2026-12-06 23:50:59.592888+00', '2026-12-06 23:51:00.054648+00', NULL, NULL);
INSERT INTO public.call VALUES ('1900f91381f2ced2db077015def2c11a', '516ce628eec71e4198ffbd771cb027cb', '3e066fb139ce50cf3f8357d4fbbed005', 'tools/call', '{"name":"two_rounds","arguments":{"topic":"upgrade"}}', 'awaiting_input', 1, 0, NULL, NULL, '2026-12-06 23:51:00.195075+00', '2026-12-06 23:51:00.302325+00', NULL, NULL);


--
-- Data for Name: call_round; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.call_round VALUES ('c81d01561a9f52f5101b7ac256e0eb8e', 'fc7e31e1e65ca7a2bf3faae3a2f929e7', 1, '{"go":{"method":"elicitation/create","params":{"mode":"form","message":"Echo test: continue?","requestedSchema":{"properties":{"ok":{"type":"boolean","title":"OK"}},"type":"object"}}}}', '"kept across the upgrade"', 'open', NULL, '2026-12-06 23:51:00.045959+00');
INSERT INTO public.call_round VALUES ('a6489345f61568f35647a1711a9c23d1', '1900f91381f2ced2db077015def2c11a', 1, '{"first":{"method":"elicitation/create","params":{"mode":"form","message":"About upgrade: what is your name?","requestedSchema":{"properties":{"name":{"type":"string","title":"Name"}},"required":["name"],"type":"object"}}}}', '"r1"', 'open', NULL, '2026-12-06 23:51:00.291226+00');


--
-- Data for Name: dispatch_job; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.dispatch_job VALUES ('e1d436d0f40d6d926144b2c1e4fe14a7', 'fc7e31e1e65ca7a2bf3faae3a2f929e7', NULL, 'initial', NULL, 'done', 1, '2026-12-06 23:50:59.605598+00', NULL, '22378-be0ebc74', NULL, '2026-12-06 23:50:59.605601+00');
INSERT INTO public.dispatch_job VALUES ('180490ea2290f5cd1bca000643ab0598', '1900f91381f2ced2db077015def2c11a', NULL, 'initial', NULL, 'done', 1, '2026-12-06 23:51:00.199369+00', NULL, '22378-be0ebc74', NULL, '2026-12-06 23:51:00.199371+00');


--
-- Data for Name: elicitation; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.elicitation VALUES ('fd0acf12e3d326618e0f458001fcbabd', 'c81d01561a9f52f5101b7ac256e0eb8e', 'fc7e31e1e65ca7a2bf3faae3a2f929e7', 'bfa6d147f818d1b5c50692ffb8379453', 'e9540efaf30e95154ada0687ff0e030c', 'go', 'form', 'Echo test: continue?', '{"properties": {"ok": {"type": "boolean", "title": "OK"}}, "type": "object"}', NULL, '2a99c6246a9ba0930621034c5068520df9e8750f3d24ebdec2d3e0c1a9058aa4', 'dd686294416a2c5fcaeceb6e63d09741d5090f3bf26f45b7db2d367cafa62e46', 'pending', NULL, NULL, NULL, NULL, '2036-12-03 23:51:00.062463+00', '2026-12-06 23:51:00.063792+00', 'owner_or_approvers', false, 1, NULL, 'cancel', '{"applied": [], "destructive": true}', NULL, NULL);
INSERT INTO public.elicitation VALUES ('3ad35ca137b7b7517459071e9b182d5b', 'a6489345f61568f35647a1711a9c23d1', '1900f91381f2ced2db077015def2c11a', 'bfa6d147f818d1b5c50692ffb8379453', 'e9540efaf30e95154ada0687ff0e030c', 'first', 'form', 'About upgrade: what is your name?', '{"properties": {"name": {"type": "string", "title": "Name"}}, "required": ["name"], "type": "object"}', NULL, 'd3f053eb725b3c268e72c6317c8d2626696369b32400cf4b71af72e2ae31788d', '6d59066458a3e16e699e90c2e2f8abde271ff155fc27dfd773dc70c8062b2626', 'pending', '{"name":"Ada"}', NULL, NULL, NULL, '2036-12-03 23:51:00.310795+00', '2026-12-06 23:51:00.311349+00', 'owner_or_approvers', false, 2, NULL, 'cancel', '{"applied": [{"from": "tool rule two_rounds", "set": {"required_approvals": 2}}], "destructive": true}', '88bab6d8f6dc68a877064d584cbb5b6c50e74f617ea50d81d3a53c2ee6ffbc4f', NULL);


--
-- Data for Name: elicitation_signature; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.elicitation_signature VALUES ('0ef72e2ae2aa79eae216a679aedd24d8', '3ad35ca137b7b7517459071e9b182d5b', '47e49488859776526faeada305778dd2', 'accept', '88bab6d8f6dc68a877064d584cbb5b6c50e74f617ea50d81d3a53c2ee6ffbc4f', 'token:ad564fdd7b695d2890ec326b4add290b', '2026-12-06 23:51:00.458872+00');


--
-- Data for Name: identity_api_token; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.identity_api_token VALUES ('94373909f65a8778a60a3e7b12d3e2b2', '75163b086bc0d5f22b1176ed67f6ee3f', 'bfa6d147f818d1b5c50692ffb8379453', 'cli', 'c2234428432304dc133b9df418411c352494b15a905aae4d7964663b8387271a', '2026-12-06 23:50:56.826429+00', NULL, NULL);
INSERT INTO public.identity_api_token VALUES ('5691afa3242b573be7d6f0ba789ed249', '2afc4ce9bb988fb5d50bb6f8d399cb06', 'bfa6d147f818d1b5c50692ffb8379453', 'cli', 'a10f72ac17b0f212626ebc3bc8678f619b477aa13f8330bf2d8954383908ad8c', '2026-12-06 23:50:57.132799+00', NULL, NULL);
INSERT INTO public.identity_api_token VALUES ('897e09c71723b4f96561736b4833f8bd', 'ad0d303cf31cbca468c70f1d1dc4fd83', '0e882f5499187e3b381844a42296fb61', 'cli', 'f22fc8d865248ab6af6cb9aeb8513843953352262ce795faf2f34bd15d6ef9c9', '2026-12-06 23:50:57.427331+00', NULL, NULL);
INSERT INTO public.identity_api_token VALUES ('2db932444691116e4cdffaa7d98548b7', 'e9540efaf30e95154ada0687ff0e030c', 'bfa6d147f818d1b5c50692ffb8379453', 'cli', '57a9bacb23509bc536d731b3711ac32b1aa9c6e4fb22e8e6e35258f637bb4587', '2026-12-06 23:50:56.299056+00', '2026-12-06 23:50:57.651814+00', NULL);
INSERT INTO public.identity_api_token VALUES ('ad564fdd7b695d2890ec326b4add290b', '47e49488859776526faeada305778dd2', 'bfa6d147f818d1b5c50692ffb8379453', 'cli', '8f119ffa827039d7f6989170bb81052463bca20ee547800b3543ffdb7de66975', '2026-12-06 23:50:56.543365+00', '2026-12-06 23:51:00.377822+00', NULL);


--
-- Data for Name: identity_login_failure; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: identity_membership; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.identity_membership VALUES ('a4b2dc98e2ce02e75cf4e8c3918e5a7a', 'e9540efaf30e95154ada0687ff0e030c', 'bfa6d147f818d1b5c50692ffb8379453', 'member', 'manual');
INSERT INTO public.identity_membership VALUES ('b8a04e5f33ea8612d80bb10718b86353', '47e49488859776526faeada305778dd2', 'bfa6d147f818d1b5c50692ffb8379453', 'approver', 'manual');
INSERT INTO public.identity_membership VALUES ('ac25b4a5392bd35308f9da561fa6de37', '75163b086bc0d5f22b1176ed67f6ee3f', 'bfa6d147f818d1b5c50692ffb8379453', 'approver', 'manual');
INSERT INTO public.identity_membership VALUES ('c053ae1bd088942016e8ea080c45aae1', '2afc4ce9bb988fb5d50bb6f8d399cb06', 'bfa6d147f818d1b5c50692ffb8379453', 'auditor', 'manual');
INSERT INTO public.identity_membership VALUES ('dab79d3537871fe84e9c9ebfe59e95d2', 'ad0d303cf31cbca468c70f1d1dc4fd83', '0e882f5499187e3b381844a42296fb61', 'approver', 'manual');


--
-- Data for Name: identity_oidc_login; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: identity_server_credential; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: identity_team; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.identity_team VALUES ('bfa6d147f818d1b5c50692ffb8379453', 'platform', '2026-12-06 23:50:55.98082+00');
INSERT INTO public.identity_team VALUES ('0e882f5499187e3b381844a42296fb61', 'elsewhere', '2026-12-06 23:50:56.018943+00');


--
-- Data for Name: identity_user; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.identity_user VALUES ('e9540efaf30e95154ada0687ff0e030c', 'dev', 'scrypt$32768$8$1$xmDcBGLOTBlancfFHoTuNw$hyufcGGnMbSPN5r_qBnAq0bqU8IxiyKeyRl57nOWtuM', '2026-12-06 23:50:56.268402+00', false, NULL, NULL);
INSERT INTO public.identity_user VALUES ('47e49488859776526faeada305778dd2', 'lead', 'scrypt$32768$8$1$9XoGyRifAUgArJD9A6E1EA$addICJBcDnryroghNjGE-X-Yyp4n_QxT7EP4OBNh0WU', '2026-12-06 23:50:56.511906+00', false, NULL, NULL);
INSERT INTO public.identity_user VALUES ('75163b086bc0d5f22b1176ed67f6ee3f', 'lead2', 'scrypt$32768$8$1$8HWQYqnfx-43_kYfxd4xdQ$xNrAA0_ymlZvye-GboRNRutoKLy_tmrAatnsQ75M0R0', '2026-12-06 23:50:56.795402+00', false, NULL, NULL);
INSERT INTO public.identity_user VALUES ('2afc4ce9bb988fb5d50bb6f8d399cb06', 'viewer', 'scrypt$32768$8$1$SEsVGD3AMBKUKsyHmMhHfw$MVN4JLkGoaEUtF3fVF4-y6V91tpE80Eum7-Zl2rORJ4', '2026-12-06 23:50:57.097528+00', false, NULL, NULL);
INSERT INTO public.identity_user VALUES ('ad0d303cf31cbca468c70f1d1dc4fd83', 'outsider', 'scrypt$32768$8$1$oEbsq8SgAEo_k-RYkygycg$lUEg1qwc7BWIihJ-N0e_jCbOqV_Ababvak-Kqr_Uekk', '2026-12-06 23:50:57.395854+00', false, NULL, NULL);


--
-- Data for Name: identity_web_session; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: mcp_server; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.mcp_server VALUES ('3e066fb139ce50cf3f8357d4fbbed005', 'bfa6d147f818d1b5c50692ffb8379453', 'mrtr', 'stdio', '["python", "tests/servers/mrtr_server.py"]', '{"MRTR_LOG": {"sealed": "088Qs1Bs8KbCzMcyPJ0BN6/BItiCUZidemsyIAOGqh5hCCzllzeL1h+9"}}', NULL, '{}', false, false, false, '2026-12-06 23:50:57.451029+00', 'shared', NULL, true, '2026-07-28');


--
-- Data for Name: policy_rule; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.policy_rule VALUES ('643008a614c571c64c64b5d80daafa52', 'bfa6d147f818d1b5c50692ffb8379453', 'tool', NULL, 'two_rounds', 'tool:*:two_rounds', NULL, NULL, 2, NULL, NULL, NULL, NULL, '2026-12-06 23:50:57.554371+00');


--
-- Data for Name: run; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.run VALUES ('72e73cc87716a6cda7779984f3b352bd', 'bfa6d147f818d1b5c50692ffb8379453', 'e9540efaf30e95154ada0687ff0e030c', 'pytest', 'test run', '2026-12-06 23:50:57.678369+00', NULL);
INSERT INTO public.run VALUES ('516ce628eec71e4198ffbd771cb027cb', 'bfa6d147f818d1b5c50692ffb8379453', 'e9540efaf30e95154ada0687ff0e030c', 'pytest', 'test run', '2026-12-06 23:51:00.138193+00', NULL);


--
-- Name: audit_event_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.audit_event_seq_seq', 1, false);


--
-- Name: alembic_version alembic_version_pkc; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alembic_version
    ADD CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num);


--
-- Name: agent_request pk_agent_request; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.agent_request
    ADD CONSTRAINT pk_agent_request PRIMARY KEY (id);


--
-- Name: audit_checkpoint pk_audit_checkpoint; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit_checkpoint
    ADD CONSTRAINT pk_audit_checkpoint PRIMARY KEY (seq);


--
-- Name: audit_event pk_audit_event; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit_event
    ADD CONSTRAINT pk_audit_event PRIMARY KEY (seq);


--
-- Name: audit_head pk_audit_head; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit_head
    ADD CONSTRAINT pk_audit_head PRIMARY KEY (id);


--
-- Name: call pk_call; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.call
    ADD CONSTRAINT pk_call PRIMARY KEY (id);


--
-- Name: call_round pk_call_round; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.call_round
    ADD CONSTRAINT pk_call_round PRIMARY KEY (id);


--
-- Name: dispatch_job pk_dispatch_job; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dispatch_job
    ADD CONSTRAINT pk_dispatch_job PRIMARY KEY (id);


--
-- Name: elicitation pk_elicitation; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.elicitation
    ADD CONSTRAINT pk_elicitation PRIMARY KEY (id);


--
-- Name: elicitation_signature pk_elicitation_signature; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.elicitation_signature
    ADD CONSTRAINT pk_elicitation_signature PRIMARY KEY (id);


--
-- Name: identity_api_token pk_identity_api_token; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_api_token
    ADD CONSTRAINT pk_identity_api_token PRIMARY KEY (id);


--
-- Name: identity_login_failure pk_identity_login_failure; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_login_failure
    ADD CONSTRAINT pk_identity_login_failure PRIMARY KEY (id);


--
-- Name: identity_membership pk_identity_membership; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_membership
    ADD CONSTRAINT pk_identity_membership PRIMARY KEY (id);


--
-- Name: identity_oidc_login pk_identity_oidc_login; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_oidc_login
    ADD CONSTRAINT pk_identity_oidc_login PRIMARY KEY (id);


--
-- Name: identity_server_credential pk_identity_server_credential; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_server_credential
    ADD CONSTRAINT pk_identity_server_credential PRIMARY KEY (id);


--
-- Name: identity_team pk_identity_team; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_team
    ADD CONSTRAINT pk_identity_team PRIMARY KEY (id);


--
-- Name: identity_user pk_identity_user; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_user
    ADD CONSTRAINT pk_identity_user PRIMARY KEY (id);


--
-- Name: identity_web_session pk_identity_web_session; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_web_session
    ADD CONSTRAINT pk_identity_web_session PRIMARY KEY (id);


--
-- Name: mcp_server pk_mcp_server; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mcp_server
    ADD CONSTRAINT pk_mcp_server PRIMARY KEY (id);


--
-- Name: policy_rule pk_policy_rule; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.policy_rule
    ADD CONSTRAINT pk_policy_rule PRIMARY KEY (id);


--
-- Name: run pk_run; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.run
    ADD CONSTRAINT pk_run PRIMARY KEY (id);


--
-- Name: agent_request uq_agent_request_round_id; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.agent_request
    ADD CONSTRAINT uq_agent_request_round_id UNIQUE (round_id, key);


--
-- Name: call_round uq_call_round_call_id; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.call_round
    ADD CONSTRAINT uq_call_round_call_id UNIQUE (call_id, n);


--
-- Name: dispatch_job uq_dispatch_job_round_id; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dispatch_job
    ADD CONSTRAINT uq_dispatch_job_round_id UNIQUE (round_id);


--
-- Name: elicitation_signature uq_elicitation_signature_elicitation_id; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.elicitation_signature
    ADD CONSTRAINT uq_elicitation_signature_elicitation_id UNIQUE (elicitation_id, user_id);


--
-- Name: identity_api_token uq_identity_api_token_token_hash; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_api_token
    ADD CONSTRAINT uq_identity_api_token_token_hash UNIQUE (token_hash);


--
-- Name: identity_membership uq_identity_membership_user_id; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_membership
    ADD CONSTRAINT uq_identity_membership_user_id UNIQUE (user_id, team_id);


--
-- Name: identity_server_credential uq_identity_server_credential_user_id; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_server_credential
    ADD CONSTRAINT uq_identity_server_credential_user_id UNIQUE (user_id, server_id);


--
-- Name: identity_team uq_identity_team_name; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_team
    ADD CONSTRAINT uq_identity_team_name UNIQUE (name);


--
-- Name: identity_user uq_identity_user_name; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_user
    ADD CONSTRAINT uq_identity_user_name UNIQUE (name);


--
-- Name: identity_user uq_identity_user_oidc_issuer; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_user
    ADD CONSTRAINT uq_identity_user_oidc_issuer UNIQUE (oidc_issuer, oidc_subject);


--
-- Name: mcp_server uq_mcp_server_team_id; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mcp_server
    ADD CONSTRAINT uq_mcp_server_team_id UNIQUE (team_id, name);


--
-- Name: policy_rule uq_policy_rule_team_id; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.policy_rule
    ADD CONSTRAINT uq_policy_rule_team_id UNIQUE (team_id, scope_key);


--
-- Name: run uq_run_team_id; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.run
    ADD CONSTRAINT uq_run_team_id UNIQUE (team_id, gateway_key);


--
-- Name: ix_agent_request_call_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_agent_request_call_id ON public.agent_request USING btree (call_id);


--
-- Name: ix_agent_request_round_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_agent_request_round_id ON public.agent_request USING btree (round_id);


--
-- Name: ix_audit_event_action; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_audit_event_action ON public.audit_event USING btree (action);


--
-- Name: ix_audit_event_call_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_audit_event_call_id ON public.audit_event USING btree (call_id);


--
-- Name: ix_audit_event_subject_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_audit_event_subject_id ON public.audit_event USING btree (subject_id);


--
-- Name: ix_audit_event_team_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_audit_event_team_id ON public.audit_event USING btree (team_id);


--
-- Name: ix_call_round_call_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_call_round_call_id ON public.call_round USING btree (call_id);


--
-- Name: ix_call_run_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_call_run_id ON public.call USING btree (run_id);


--
-- Name: ix_call_status; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_call_status ON public.call USING btree (status);


--
-- Name: ix_dispatch_job_call_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_dispatch_job_call_id ON public.dispatch_job USING btree (call_id);


--
-- Name: ix_dispatch_job_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_dispatch_job_due ON public.dispatch_job USING btree (status, not_before);


--
-- Name: ix_elicitation_call_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_elicitation_call_id ON public.elicitation USING btree (call_id);


--
-- Name: ix_elicitation_decided; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_elicitation_decided ON public.elicitation USING btree (team_id, decided_at);


--
-- Name: ix_elicitation_inbox; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_elicitation_inbox ON public.elicitation USING btree (status, team_id, created_at);


--
-- Name: ix_elicitation_owner_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_elicitation_owner_id ON public.elicitation USING btree (owner_id);


--
-- Name: ix_elicitation_round_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_elicitation_round_id ON public.elicitation USING btree (round_id);


--
-- Name: ix_elicitation_signature_elicitation_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_elicitation_signature_elicitation_id ON public.elicitation_signature USING btree (elicitation_id);


--
-- Name: ix_identity_api_token_user_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_identity_api_token_user_id ON public.identity_api_token USING btree (user_id);


--
-- Name: ix_identity_login_failure_key_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_identity_login_failure_key_at ON public.identity_login_failure USING btree (key, at);


--
-- Name: ix_identity_membership_team_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_identity_membership_team_id ON public.identity_membership USING btree (team_id);


--
-- Name: ix_identity_membership_user_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_identity_membership_user_id ON public.identity_membership USING btree (user_id);


--
-- Name: ix_identity_server_credential_user_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_identity_server_credential_user_id ON public.identity_server_credential USING btree (user_id);


--
-- Name: ix_identity_web_session_user_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_identity_web_session_user_id ON public.identity_web_session USING btree (user_id);


--
-- Name: ix_mcp_server_team_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_mcp_server_team_id ON public.mcp_server USING btree (team_id);


--
-- Name: ix_run_owner_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_run_owner_id ON public.run USING btree (owner_id);


--
-- Name: ix_run_team_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_run_team_created ON public.run USING btree (team_id, created_at);


--
-- Name: ix_run_team_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_run_team_id ON public.run USING btree (team_id);


--
-- Name: audit_checkpoint audit_checkpoint_append_only; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER audit_checkpoint_append_only BEFORE DELETE OR UPDATE ON public.audit_checkpoint FOR EACH ROW EXECUTE FUNCTION public.audit_checkpoint_append_only();


--
-- Name: audit_event audit_event_append_only; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER audit_event_append_only BEFORE DELETE OR UPDATE ON public.audit_event FOR EACH ROW EXECUTE FUNCTION public.audit_event_append_only();


--
-- Name: agent_request fk_agent_request_call_id_call; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.agent_request
    ADD CONSTRAINT fk_agent_request_call_id_call FOREIGN KEY (call_id) REFERENCES public.call(id);


--
-- Name: agent_request fk_agent_request_owner_id_identity_user; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.agent_request
    ADD CONSTRAINT fk_agent_request_owner_id_identity_user FOREIGN KEY (owner_id) REFERENCES public.identity_user(id);


--
-- Name: agent_request fk_agent_request_round_id_call_round; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.agent_request
    ADD CONSTRAINT fk_agent_request_round_id_call_round FOREIGN KEY (round_id) REFERENCES public.call_round(id);


--
-- Name: call_round fk_call_round_call_id_call; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.call_round
    ADD CONSTRAINT fk_call_round_call_id_call FOREIGN KEY (call_id) REFERENCES public.call(id);


--
-- Name: call fk_call_run_id_run; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.call
    ADD CONSTRAINT fk_call_run_id_run FOREIGN KEY (run_id) REFERENCES public.run(id);


--
-- Name: call fk_call_server_id_mcp_server; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.call
    ADD CONSTRAINT fk_call_server_id_mcp_server FOREIGN KEY (server_id) REFERENCES public.mcp_server(id);


--
-- Name: dispatch_job fk_dispatch_job_call_id_call; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dispatch_job
    ADD CONSTRAINT fk_dispatch_job_call_id_call FOREIGN KEY (call_id) REFERENCES public.call(id);


--
-- Name: dispatch_job fk_dispatch_job_round_id_call_round; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dispatch_job
    ADD CONSTRAINT fk_dispatch_job_round_id_call_round FOREIGN KEY (round_id) REFERENCES public.call_round(id);


--
-- Name: elicitation fk_elicitation_call_id_call; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.elicitation
    ADD CONSTRAINT fk_elicitation_call_id_call FOREIGN KEY (call_id) REFERENCES public.call(id);


--
-- Name: elicitation fk_elicitation_decided_by_identity_user; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.elicitation
    ADD CONSTRAINT fk_elicitation_decided_by_identity_user FOREIGN KEY (decided_by) REFERENCES public.identity_user(id);


--
-- Name: elicitation fk_elicitation_owner_id_identity_user; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.elicitation
    ADD CONSTRAINT fk_elicitation_owner_id_identity_user FOREIGN KEY (owner_id) REFERENCES public.identity_user(id);


--
-- Name: elicitation fk_elicitation_round_id_call_round; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.elicitation
    ADD CONSTRAINT fk_elicitation_round_id_call_round FOREIGN KEY (round_id) REFERENCES public.call_round(id);


--
-- Name: elicitation_signature fk_elicitation_signature_elicitation_id_elicitation; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.elicitation_signature
    ADD CONSTRAINT fk_elicitation_signature_elicitation_id_elicitation FOREIGN KEY (elicitation_id) REFERENCES public.elicitation(id);


--
-- Name: elicitation_signature fk_elicitation_signature_user_id_identity_user; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.elicitation_signature
    ADD CONSTRAINT fk_elicitation_signature_user_id_identity_user FOREIGN KEY (user_id) REFERENCES public.identity_user(id);


--
-- Name: elicitation fk_elicitation_team_id_identity_team; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.elicitation
    ADD CONSTRAINT fk_elicitation_team_id_identity_team FOREIGN KEY (team_id) REFERENCES public.identity_team(id);


--
-- Name: identity_api_token fk_identity_api_token_team_id_identity_team; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_api_token
    ADD CONSTRAINT fk_identity_api_token_team_id_identity_team FOREIGN KEY (team_id) REFERENCES public.identity_team(id);


--
-- Name: identity_api_token fk_identity_api_token_user_id_identity_user; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_api_token
    ADD CONSTRAINT fk_identity_api_token_user_id_identity_user FOREIGN KEY (user_id) REFERENCES public.identity_user(id);


--
-- Name: identity_membership fk_identity_membership_team_id_identity_team; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_membership
    ADD CONSTRAINT fk_identity_membership_team_id_identity_team FOREIGN KEY (team_id) REFERENCES public.identity_team(id);


--
-- Name: identity_membership fk_identity_membership_user_id_identity_user; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_membership
    ADD CONSTRAINT fk_identity_membership_user_id_identity_user FOREIGN KEY (user_id) REFERENCES public.identity_user(id);


--
-- Name: identity_server_credential fk_identity_server_credential_server_id_mcp_server; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_server_credential
    ADD CONSTRAINT fk_identity_server_credential_server_id_mcp_server FOREIGN KEY (server_id) REFERENCES public.mcp_server(id);


--
-- Name: identity_server_credential fk_identity_server_credential_user_id_identity_user; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_server_credential
    ADD CONSTRAINT fk_identity_server_credential_user_id_identity_user FOREIGN KEY (user_id) REFERENCES public.identity_user(id);


--
-- Name: identity_web_session fk_identity_web_session_user_id_identity_user; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_web_session
    ADD CONSTRAINT fk_identity_web_session_user_id_identity_user FOREIGN KEY (user_id) REFERENCES public.identity_user(id);


--
-- Name: mcp_server fk_mcp_server_team_id_identity_team; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mcp_server
    ADD CONSTRAINT fk_mcp_server_team_id_identity_team FOREIGN KEY (team_id) REFERENCES public.identity_team(id);


--
-- Name: policy_rule fk_policy_rule_server_id_mcp_server; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.policy_rule
    ADD CONSTRAINT fk_policy_rule_server_id_mcp_server FOREIGN KEY (server_id) REFERENCES public.mcp_server(id);


--
-- Name: policy_rule fk_policy_rule_team_id_identity_team; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.policy_rule
    ADD CONSTRAINT fk_policy_rule_team_id_identity_team FOREIGN KEY (team_id) REFERENCES public.identity_team(id);


--
-- Name: policy_rule fk_policy_rule_updated_by_identity_user; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.policy_rule
    ADD CONSTRAINT fk_policy_rule_updated_by_identity_user FOREIGN KEY (updated_by) REFERENCES public.identity_user(id);


--
-- Name: run fk_run_owner_id_identity_user; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.run
    ADD CONSTRAINT fk_run_owner_id_identity_user FOREIGN KEY (owner_id) REFERENCES public.identity_user(id);


--
-- Name: run fk_run_team_id_identity_team; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.run
    ADD CONSTRAINT fk_run_team_id_identity_team FOREIGN KEY (team_id) REFERENCES public.identity_team(id);


--
-- PostgreSQL database dump complete
--

\unrestrict gbROpRW57fSwEwhwukGenQ9B72QmnRFYs9iGOasdtQB2Xq7F2fkN3529ASvAo2D

