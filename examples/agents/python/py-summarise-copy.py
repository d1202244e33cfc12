# Summarises the page into its first sentences and copies the summary to
# the clipboard. Writing the clipboard asks the user first (a prompt).
text = await restricted_api.getPageText()
sentences = [s.strip() for s in text.replace("\n", " ").split(".") if s.strip()]
summary = ". ".join(sentences[:3]) + ("." if sentences else "")
restricted_api.log("summary:", summary or "(the page has no text)")
try:
    await restricted_api.writeToClipboard(summary)
    restricted_api.log("copied to the clipboard")
except RestrictedAPIError as e:
    restricted_api.log("not copied:", e.code)
