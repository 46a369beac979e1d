// Marks through the real binaries on the tiny model: `rgbaq mark` stars, rejects and clears, with the
// socket peer's uid and the time recorded; `ls jobs --marked`, `export --marked` (CSV and JSONL) and
// `sheet --marked` show only those jobs; bad ids, options and params are refused with what is wrong,
// a job not in the queue fails the whole mark; `retry_jobs` requeues failed and canceled jobs, and
// a mark stays with its job through the render that follows.
#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <sstream>

#include "storage/png_file.h"
#include "tests/daemon/daemon_test_helpers.h"

namespace rgbaq {
namespace {

double wall_clock() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// Who the daemon should record for this process, worked out here: "uid N (name)".
std::string this_user() {
  const passwd* pw = getpwuid(getuid());
  return "uid " + std::to_string(getuid()) + (pw ? std::string(" (") + pw->pw_name + ")" : "");
}

json jobs_of(const DaemonProcess& d, std::vector<std::string> args) {
  args.insert(args.begin(), {"ls", "jobs", "--all", "--json"});
  const auto r = rgbaq(d, args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out)["jobs"];
}

// Job ids by "prompt seed", as the daemon lists them.
std::map<std::string, int64_t> ids_by_prompt_and_seed(const DaemonProcess& d) {
  std::map<std::string, int64_t> ids;
  for (const auto& j : jobs_of(d, {})) ids[j["prompt"].get<std::string>() + " " + std::to_string(j["seed"].get<uint64_t>())] = j["id"];
  return ids;
}

std::vector<int64_t> ids_in(const json& jobs) {
  std::vector<int64_t> ids;
  for (const auto& j : jobs) ids.push_back(j["id"]);
  return ids;
}

// One request on a raw connection, as a client without the CLI's checks sends it.
json call(const DaemonProcess& d, const std::string& method, const json& params) {
  Raw c(d.socket());
  EXPECT_TRUE(c.send_all(json({{"v", 1}, {"id", 1}, {"method", method}, {"params", params}}).dump() + "\n"));
  const std::string line = c.read_line();
  return line.empty() ? json() : json::parse(line);
}

TEST(DaemonMarks, MarksFromTheCliAreSeenInListsExportsAndSheets) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const fs::path out = dir.path() / "o";
  const auto sub = rgbaq(d, {"submit", "-", "--seeds", "1-2", "--size", "128", "--out", out.string(), "--wait"}, "prompt\nowl\nfox\n");
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;
  const auto id = ids_by_prompt_and_seed(d);
  const auto text = [](int64_t v) { return std::to_string(v); };
  for (const auto& j : jobs_of(d, {})) {
    EXPECT_TRUE(j.contains("mark") && j["mark"].is_null()) << j.dump();
    EXPECT_TRUE(j["marked_at"].is_null() && j["marked_by"].is_null()) << j.dump();
  }

  const double before = wall_clock();
  const auto star = rgbaq(d, {"mark", text(id.at("owl 1")), text(id.at("owl 2")), "--star"});
  const double after = wall_clock();
  EXPECT_EQ(star.exit_code, 0) << star.err;
  EXPECT_EQ(star.out, "2 jobs starred\n");
  EXPECT_EQ(rgbaq(d, {"mark", text(id.at("fox 1")), "--reject"}).out, "1 job rejected\n");
  EXPECT_EQ(rgbaq(d, {"mark", text(id.at("owl 1")) + "-" + text(id.at("fox 1")), "--star"}).out,
            "1 job starred; the other 2 already were\n")
      << "a range: fox 1's reject becomes a star";
  EXPECT_EQ(rgbaq(d, {"mark", text(id.at("fox 1")), "--reject"}).out, "1 job rejected\n");

  const json starred = jobs_of(d, {"--marked", "star"});
  EXPECT_EQ(ids_in(starred), (std::vector<int64_t>{id.at("owl 1"), id.at("owl 2")}));
  for (const auto& j : starred) {
    EXPECT_EQ(j["mark"], "star");
    EXPECT_EQ(j["marked_by"], this_user()) << "the socket's peer, whatever the client claims";
    EXPECT_GE(j["marked_at"].get<double>(), before - 1);
    EXPECT_LE(j["marked_at"].get<double>(), after + 1);
  }
  EXPECT_EQ(ids_in(jobs_of(d, {"--marked", "reject"})), (std::vector<int64_t>{id.at("fox 1")}));
  EXPECT_EQ(ids_in(jobs_of(d, {"--marked", "none"})), (std::vector<int64_t>{id.at("fox 2")}));
  EXPECT_EQ(jobs_of(d, {"--marked", "any", "--run", "1"}).size(), 3u);
  EXPECT_EQ(jobs_of(d, {"--marked", "star", "--state", "failed"}).size(), 0u);
  const auto table = rgbaq(d, {"ls", "jobs", "--marked", "any"});
  EXPECT_EQ(table.out.rfind("JOB     RUN   STATE     MARK    SEED", 0), 0u) << table.out;
  std::istringstream rows(table.out);
  std::string header, line;
  std::getline(rows, header);
  std::vector<std::string> marks;
  while (std::getline(rows, line)) {
    std::istringstream cells(line);
    std::string job, run, state, mark;
    if (line.rfind(' ', 0) == 0) continue;  // the output line under each job
    cells >> job >> run >> state >> mark;
    marks.push_back(job + ":" + mark);
  }
  EXPECT_EQ(marks, (std::vector<std::string>{text(id.at("owl 1")) + ":star", text(id.at("owl 2")) + ":star",
                                             text(id.at("fox 1")) + ":reject"}));
  const auto bad = rgbaq(d, {"ls", "jobs", "--marked", "gold"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("marked \"gold\" is not one of star, reject, none, any"), std::string::npos) << bad.err;

  // Exports: CSV with its mark column, JSONL with the mark fields, each only the jobs asked for.
  const auto csv = rgbaq(d, {"export", "1", "--format", "csv", "--marked", "star"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::istringstream csv_lines(csv.out);
  std::getline(csv_lines, header);
  EXPECT_EQ(header, "job,run,state,prompt,seed,width,height,name,lora,output,error,attempts,seconds,host,mark,template,choices,qa,replaces");
  std::vector<std::string> csv_rows;
  while (std::getline(csv_lines, line)) {
    std::vector<std::string> fields;
    std::istringstream f(line);
    for (std::string field; std::getline(f, field, ',');) fields.push_back(field);
    ASSERT_EQ(fields.size(), 19u) << line;
    csv_rows.push_back(fields[0] + " " + fields[3] + " " + fields[4] + " " + fields[14]);
  }
  EXPECT_EQ(csv_rows, (std::vector<std::string>{text(id.at("owl 1")) + " owl 1 star", text(id.at("owl 2")) + " owl 2 star"}));
  const auto unmarked_csv = rgbaq(d, {"export", "1", "--format", "csv", "--marked", "none"});
  EXPECT_NE(unmarked_csv.out.find(",fox,2,"), std::string::npos) << unmarked_csv.out;
  EXPECT_EQ(unmarked_csv.out.back(), '\n');
  EXPECT_EQ(unmarked_csv.out.substr(unmarked_csv.out.size() - 2), ",\n") << "an unmarked job's mark field is empty";
  const auto jsonl = rgbaq(d, {"export", "1", "--marked", "reject"});
  ASSERT_EQ(jsonl.exit_code, 0) << jsonl.err;
  const json rejected = json::parse(jsonl.out.substr(0, jsonl.out.find('\n')));
  EXPECT_EQ(jsonl.out.find('\n'), jsonl.out.size() - 1) << "one job: " << jsonl.out;
  EXPECT_EQ(rejected["id"], id.at("fox 1"));
  EXPECT_EQ(rejected["mark"], "reject");
  EXPECT_EQ(rejected["marked_by"], this_user());
  EXPECT_EQ(rgbaq(d, {"export", "1", "--marked", "x"}).exit_code, 2);

  // The contact sheet of the starred jobs: owl's row, both seeds; of the rejected: fox, seed 1.
  for (const auto& [filter, rows_want, columns_want] :
       {std::tuple{"star", json{"owl"}, json{"seed 1", "seed 2"}}, std::tuple{"reject", json{"fox"}, json{"seed 1"}}}) {
    const fs::path sheet = dir.path() / (std::string(filter) + ".png");
    const auto r = rgbaq(d, {"sheet", "1", "--marked", filter, "-o", sheet.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json legend = json::parse(storage::read_png(sheet).texts.at("rgbaq-sheet"));
    EXPECT_EQ(legend["rows"], rows_want) << filter;
    EXPECT_EQ(legend["columns"], columns_want) << filter;
    EXPECT_EQ(legend["marked"], filter);
  }

  // Clearing: the reject is gone, who and when with it; a second clear changes nothing.
  EXPECT_EQ(rgbaq(d, {"mark", text(id.at("fox 1")), "--clear"}).out, "1 job unmarked\n");
  EXPECT_EQ(rgbaq(d, {"mark", text(id.at("fox 1")), "--clear"}).out, "0 jobs unmarked; the other 1 had no mark\n");
  const auto sheet_none = rgbaq(d, {"sheet", "1", "--marked", "reject", "-o", (dir.path() / "none.png").string()});
  EXPECT_EQ(sheet_none.exit_code, 1);
  EXPECT_NE(sheet_none.err.find("run 1 has no jobs marked reject"), std::string::npos) << sheet_none.err;
  const json cleared = json::parse(rgbaq(d, {"ls", "jobs", "--run", "1", "--json"}).out)["jobs"];
  for (const auto& j : cleared) {
    if (j["id"] == id.at("fox 1")) {
      EXPECT_TRUE(j["mark"].is_null() && j["marked_at"].is_null() && j["marked_by"].is_null()) << j;
    }
  }
  const auto as_json = rgbaq(d, {"mark", text(id.at("fox 2")), "--star", "--json"});
  EXPECT_EQ(json::parse(as_json.out), json({{"marked", 1}}));
}

TEST(DaemonMarks, BadIdsOptionsAndParamsAreRefusedNamingWhatIsWrong) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", (dir.path() / "o").string()}, "prompt\nowl\n").exit_code, 0);
  const int64_t job = jobs_of(d, {})[0]["id"];
  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"mark", "1"}, "give one of --star, --reject or --clear"},
           {{"mark", "1", "--star", "--reject"}, "give one of --star, --reject or --clear"},
           {{"mark", "--star"}, "which jobs?"},
           {{"mark", "abc", "--star"}, "job \"abc\" is not a positive integer"},
           {{"mark", "0", "--star"}, "job \"0\" is not a positive integer"},
           {{"mark", "-3", "--star"}, "job \"-3\" is not a positive integer"},
           {{"mark", "9-3", "--star"}, "job range \"9-3\" is not FIRST-LAST"},
           {{"mark", "1-100001", "--star"}, "job range \"1-100001\" has more than 100000 jobs"},
           {{"mark", "1-60000", "60001-100001", "--star"}, "100001 jobs are more than one mark takes"}}) {
    const auto r = rgbaq(d, args);
    EXPECT_EQ(r.exit_code, 2) << args[1] << ": " << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
  // A job that is not there: named, exit 1, and the job that is there is not marked either.
  const auto missing = rgbaq(d, {"mark", std::to_string(job), "999", "998", "--star"});
  EXPECT_EQ(missing.exit_code, 1) << missing.err;
  EXPECT_NE(missing.err.find("there is no job 999; no job was marked"), std::string::npos) << missing.err;
  EXPECT_TRUE(jobs_of(d, {})[0]["mark"].is_null());

  // The protocol, without the CLI's checks: each refused with bad_request naming the param.
  for (const auto& [params, says] : std::vector<std::pair<json, std::string>>{
           {{{"mark", "star"}}, "param \"jobs\" (a list of job ids) is required"},
           {{{"jobs", job}, {"mark", "star"}}, "param \"jobs\" must be a list of job ids"},
           {{{"jobs", json::array()}, {"mark", "star"}}, "param \"jobs\" has 0 ids; give 1 to 100000"},
           {{{"jobs", {job, 1.5}}, {"mark", "star"}}, "param \"jobs\"[1] (1.5) is not a job id"},
           {{{"jobs", {"1"}}, {"mark", "star"}}, "param \"jobs\"[0] (\"1\") is not a job id"},
           {{{"jobs", {-1}}, {"mark", "star"}}, "param \"jobs\"[0] (-1) is not a job id"},
           {{{"jobs", {0}}, {"mark", "star"}}, "param \"jobs\"[0] (0) is not a job id"},
           {{{"jobs", {9223372036854775808ull}}, {"mark", "star"}}, "param \"jobs\"[0] (9223372036854775808) is not a job id"},
           {{{"jobs", {job}}}, "param \"mark\" is required"},
           {{{"jobs", {job}}, {"mark", "gold"}}, "mark \"gold\" is not \"star\", \"reject\" or null"},
           {{{"jobs", {job}}, {"mark", 1}}, "mark 1 is not \"star\", \"reject\" or null"}}) {
    const json r = call(d, "mark", params);
    EXPECT_EQ(r["ok"], false) << params.dump();
    EXPECT_EQ(r["error"]["code"], "bad_request") << r.dump();
    EXPECT_NE(r["error"]["message"].get<std::string>().find(says), std::string::npos) << r.dump();
  }
  json too_many = json::array();
  for (int i = 0; i < 100001; ++i) too_many.push_back(job);
  EXPECT_EQ(call(d, "mark", {{"jobs", too_many}, {"mark", "star"}})["error"]["message"], "param \"jobs\" has 100001 ids; give 1 to 100000");
  EXPECT_EQ(call(d, "retry_jobs", {{"jobs", {job, -2}}})["error"]["message"],
            "param \"jobs\"[1] (-2) is not a job id (a positive integer)");
  // 100,000 ids (the same job) in one request are taken; "by" from a socket client is not believed.
  too_many.erase(too_many.end() - 1);
  const json taken = call(d, "mark", {{"jobs", too_many}, {"mark", "reject"}, {"by", "someone else"}});
  EXPECT_EQ(taken["result"], json({{"marked", 1}})) << taken.dump();
  EXPECT_EQ(jobs_of(d, {})[0]["marked_by"], this_user());
  EXPECT_TRUE(d.connectable());
}

TEST(DaemonMarks, RetryJobsRequeuesFailedAndCanceledJobsAndTheMarkStaysThroughTheRender) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--seeds", "1", "--size", "128", "--out", (dir.path() / "o").string()},
                  "prompt\nowl\nfox\n").exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"cancel", "1"}).exit_code, 0);
  const auto id = ids_by_prompt_and_seed(d);
  const int64_t owl = id.at("owl 1"), fox = id.at("fox 1");
  ASSERT_EQ(rgbaq(d, {"mark", std::to_string(owl), "--star"}).exit_code, 0);
  const json marked = jobs_of(d, {"--marked", "star"});
  ASSERT_EQ(marked.size(), 1u);

  // Only owl (and an id of no job: not an error) back to the queue; fox stays canceled.
  const json r = call(d, "retry_jobs", {{"jobs", {owl, fox + 1000}}});
  EXPECT_EQ(r["result"], json({{"requeued", 1}})) << r.dump();
  EXPECT_EQ(call(d, "retry_jobs", {{"jobs", {owl}}})["result"], json({{"requeued", 0}})) << "queued already";
  ASSERT_EQ(rgbaq(d, {"resume"}).exit_code, 0);
  rgbaq(d, {"watch", "1", "--no-reconnect"});  // follows run 1 until it has finished
  const json after = jobs_of(d, {});
  for (const auto& j : after) {
    if (j["id"] == owl) {
      EXPECT_EQ(j["state"], "done") << j.dump() << log_tail(d);
      EXPECT_EQ(j["attempts"], 1);
      EXPECT_EQ(j["mark"], "star");
      EXPECT_EQ(j["marked_at"], marked[0]["marked_at"]) << "the same mark, not a new one";
      EXPECT_EQ(j["marked_by"], this_user());
    } else {
      EXPECT_EQ(j["state"], "canceled") << j.dump();
      EXPECT_TRUE(j["mark"].is_null());
    }
  }
  EXPECT_EQ(pngs_in(dir.path() / "o").size(), 1u);
}

}  // namespace
}  // namespace rgbaq
