# Outlines the page it runs on: its size in words and its headings, in the
# source design's style: restricted_api is called without await (the
# extension makes each call synchronous where the browser has WebAssembly
# JavaScript Promise Integration; docs/python.md). Every call goes to the
# host, which decides it.
text = restricted_api.getPageText()
restricted_api.log(f"{len(text.split())} words")
first = restricted_api.querySelector("h1")
if first.get("found", True) and first.get("text"):
    restricted_api.log("h1:", first["text"])
for h in restricted_api.querySelectorAll("h2, h3", limit=20):
    restricted_api.log(f"{h['tag']}:", h["text"])
