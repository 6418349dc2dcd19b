-- ACL class IDs used to hash the principals joined with U+001F, which a group name could contain: a class
-- for group "finance\x1fgroup:zz" got the ID of ["finance", "zz"] and whichever was stored first decided
-- who reads both. New IDs hash an injective encoding and names with control characters are refused where
-- they enter (docs/security.md, section 5). Classes stored before that whose principals hold such a
-- character cannot be trusted to name the readers their documents' sources meant, so they fail closed:
-- admin only, marked malformed, until the sources re-send those documents (which gives them new-format
-- IDs). The character set is the Python check's (Cc, Cf, Zl, Zp), written out as ranges.
UPDATE acl_classes
SET principals = ARRAY['role:admin'], malformed = true
WHERE EXISTS (
    SELECT 1 FROM unnest(principals) AS p
    WHERE p ~ '[\x01-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]'
       OR p ~ '^(user|group|role):(\s|$)|\s$'
       OR length(p) > 262
);
