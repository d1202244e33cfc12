type User = { name: string; age: number; active: boolean };

const users: User[] = await mcp.db.query({ sql: "SELECT * FROM users" });
const active = users.filter((u) => u.active);
const totalAge = active.reduce((s, u) => s + u.age, 0);
const avgAge = totalAge / active.length;
const rounded = Math.round(avgAge);
await mcp.slack.send({ message: `Average age: ${rounded}` });
