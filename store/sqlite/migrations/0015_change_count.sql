-- change_count is the number of elements of changes, stored so a reader
-- that cuts pages by changes need not scan the JSON, and can leave the
-- changes of rows it does not judge unread (CommitsParams.ChangesOf).
-- Commits written before it have none (NULL): readers count those from
-- changes, and always read their changes.
ALTER TABLE commits ADD COLUMN change_count INTEGER;
