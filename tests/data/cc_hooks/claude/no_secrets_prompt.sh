#!/usr/bin/env bash
# UserPromptSubmit: never send a prompt that holds what looks like a credential.
input=$(cat)
prompt=$(printf '%s' "$input" | jq -r '.prompt')
if printf '%s' "$prompt" | grep -Eq 'AKIA[0-9A-Z]{16}|-----BEGIN [A-Z ]*PRIVATE KEY-----'; then
  echo '{"decision":"block","reason":"That prompt appears to contain a credential — not sending it."}'
fi
exit 0
