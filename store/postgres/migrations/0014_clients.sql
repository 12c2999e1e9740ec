-- clients holds each push client (DESIGN.md section 8b): the principal
-- that owns it and the last ordinal admitted, written in the same
-- transaction as the commits it admits.
CREATE TABLE clients (
    space        text COLLATE "C" NOT NULL,
    id           text COLLATE "C" NOT NULL,
    owner        text        NOT NULL,
    last_ordinal bigint      NOT NULL,
    last_seq     bigint      NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (space, id)
);

CREATE INDEX clients_updated_idx ON clients (updated_at);
CREATE INDEX clients_owner_idx ON clients (space, owner);
