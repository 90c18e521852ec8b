"""The research transcript: a 40-lap literature search with a late constraint and a tool that keeps failing."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from .common import (
    Call,
    Transcript,
    prose,
    tool,
    uuid4,
)

# =============================================================================================
# research: a 40-lap literature search with a late constraint and a tool that keeps failing
#
# The goal comes in the first user message; a constraint (cite only sources published in
# 2021 or later) comes in a second user message before lap 2. fetch_pdf fails on the same
# paywalled URL at laps 7, 17 and 31: the agent forgot the earlier failures. Older sources
# turn up in searches and one is read; the final report cites only 2021-and-later ones.
# Every source, organisation, journal and person here is invented for the course; DOIs use
# the 10.5555 test prefix and web addresses the reserved .example domain.
# =============================================================================================

RESEARCH_CONSTRAINT = "published in 2021 or later"
PAYWALL_MESSAGE = (
    "The publisher returned 403 Forbidden: the full text requires a subscription or a "
    "one-time purchase (EUR 39.95). Only the abstract page is public."
)
RESEARCH_FAILURE = "full text requires a subscription"


@dataclass
class Source:
    """One invented publication the research agent can find, read and cite."""

    key: str
    year: int
    date: str  # publication date as the page shows it
    authors: str
    title: str
    venue: str
    url: str
    kind: str  # article, report, landing, blog, guide, review
    snippet: str
    abstract: str
    findings: list[str]
    discussion: str = ""
    doi: str | None = None
    sites: int = 0
    design_range: tuple[int, int] = (-22, -29)
    cop_curve: tuple[float, float] = (3.3, 0.05)
    backup: float = 0.06


SOURCES: dict[str, Source] = {s.key: s for s in [
    Source(
        "marsh2023", 2023, "2023-05-16", "Marsh, D., Okonkwo, A. and Lindahl, P.",
        "Cold-climate heat pumps in occupied homes: two heating seasons of monitoring in 48 houses",
        "Energy and Buildings Review 41(3), 201-219",
        "https://journals.ebr.example/articles/2023/0412", "article",
        "Two winters of sub-hourly monitoring in 48 occupied houses with design temperatures "
        "between -22 and -29 °C; seasonal COP including backup, and when backup heat runs.",
        "We monitored 48 occupied single-family houses heated by variable-speed cold-climate "
        "air-source heat pumps through the winters of 2020-21 and 2021-22. Heat delivered and "
        "electricity used were metered every minute, including electric resistance backup. "
        "Seasonal COP per house ranged from 2.3 to 3.3 (median 2.8). Backup heat supplied a "
        "median of 6 % of annual heat, but more than 20 % in three houses whose heat pumps "
        "were sized below 80 % of the design heat load.",
        ["Seasonal COP per house, backup included, ranged from 2.3 to 3.3, with a median of 2.8.",
         "At outdoor temperatures around -20 °C the mean hourly COP across houses was 1.8; no "
         "unit's hourly COP fell below 1.2 while the compressor was running.",
         "Electric resistance backup supplied a median of 6 % of annual heat (range 0-24 %). "
         "All three houses above 20 % had heat pumps sized below 80 % of the design heat load.",
         "Complaints about cold rooms came almost entirely from houses served by a single "
         "ductless indoor unit."],
        "Sizing against the design heat load, not against the old furnace, was the strongest "
        "predictor of low backup use. Ductless single-head installations were cheap but left "
        "bedrooms 2-4 K colder than the living area on design days.",
        doi="10.5555/ebr.2023.0412", sites=48, design_range=(-22, -29), cop_curve=(3.35, 0.052),
        backup=0.06,
    ),
    Source(
        "npeo2021", 2021, "2021-09-30", "Northern Plains Energy Office",
        "Field performance of variable-speed ductless heat pumps in a cold continental climate "
        "(report NPEO-2021-07)",
        "Northern Plains Energy Office, technical report",
        "https://energy.northernplains.example/reports/npeo-2021-07", "report",
        "State report on 31 ductless variable-speed heat pumps monitored for a full winter; "
        "capacity at -25 °C, defrost energy, seasonal COP.",
        "Thirty-one ductless variable-speed heat pumps in homes with design temperatures of "
        "-26 to -31 °C were monitored from October 2020 to April 2021. Seasonal COP ranged "
        "from 2.4 to 3.1. At -25 °C the units delivered 52-68 % of their capacity at 8.3 °C, "
        "and defrost used 6-9 % of winter electricity.",
        ["Seasonal COP (heat pump only, backup excluded) ranged from 2.4 to 3.1 across the 31 "
         "homes.",
         "Measured capacity at -25 °C was 52-68 % of the capacity the same units delivered at "
         "8.3 °C.",
         "Defrost cycles used 6-9 % of winter electricity.",
         "The lowest hourly COP recorded was 1.3, at -31 °C."],
        "Ductless systems worked best in open-plan homes; homes with closed-off bedrooms kept "
        "their baseboard heaters and used them more than planned.",
        sites=31, design_range=(-26, -31), cop_curve=(3.2, 0.055), backup=0.10,
    ),
    Source(
        "glec2018", 2018, "2018-03-02", "Great Lakes Energy Collaborative",
        "Cold climate air source heat pump field assessment",
        "Great Lakes Energy Collaborative, final report",
        "https://glec.example/library/ccashp-field-assessment-2018", "report",
        "An early field assessment of 20 cold-climate heat pumps; seasonal COP 2.1-2.7 and "
        "heavy reliance on backup heat in the coldest months.",
        "Twenty cold-climate heat pumps installed in 2015-16 were monitored for two winters. "
        "Seasonal COP ranged from 2.1 to 2.7, and backup heat supplied up to 35 % of heat in "
        "January.",
        ["Seasonal COP ranged from 2.1 to 2.7.",
         "Backup heat supplied up to 35 % of January heat at the coldest sites."],
        sites=20, design_range=(-23, -30), cop_curve=(2.9, 0.05), backup=0.18,
    ),
    Source(
        "hollis2022", 2022, "2022-04-11", "Hollis, R. and Varga, E.",
        "Performance maps of six cold-climate air-source heat pumps from +10 to -30 °C",
        "Journal of Building Thermal Systems 18(2), 77-95",
        "https://jbts.example/article/2022/0218", "article",
        "Psychrometric-chamber tests of six variable-speed cold-climate heat pumps at eight "
        "outdoor temperatures down to -30 °C, at full and part load.",
        "Six variable-speed cold-climate heat pumps were tested in psychrometric chambers at "
        "outdoor temperatures from +10 to -30 °C. At -15 °C the COP ranged from 1.9 to 2.5 and "
        "at -25 °C from 1.4 to 1.8. Maximum capacity at -25 °C was 58-81 % of the capacity at "
        "8.3 °C. Two units shut down on low-ambient protection below -28 °C.",
        ["At -15 °C the COP at maximum capacity ranged from 1.9 to 2.5; at -25 °C from 1.4 to 1.8.",
         "Maximum capacity at -25 °C was 58-81 % of the capacity at 8.3 °C.",
         "Two of the six units stopped on low-ambient protection below -28 °C.",
         "The spread between units at -25 °C was larger than the spread at +5 °C: published "
         "ratings at 8.3 °C do not rank the units correctly for cold sites."],
        "Selecting a unit for a cold site requires data at the site's design temperature; the "
        "-15 °C rating point is not enough to tell which units keep their capacity further down.",
        doi="10.5555/jbts.2022.0218",
    ),
    Source(
        "lindqvist2022", 2022, "2022-11-03", "Lindqvist, M., Berg, S., Aalto, J. and Haugen, K.",
        "Field performance of 212 air-to-water heat pumps in Nordic single-family houses",
        "Nordic Journal of Building Physics 9(4), 311-334",
        "https://www.njbp.example/doi/10.5555/njbp.2022.0931", "landing",
        "The largest Nordic field study of air-to-water heat pumps: 212 houses, seasonal "
        "performance factor by climate zone and emitter temperature.",
        "We analysed one to three years of monitoring data from 212 air-to-water heat pumps in "
        "single-family houses in four Nordic climate zones. The median seasonal performance "
        "factor including backup heat and domestic hot water was 2.7 (range 2.0-3.6). SPF "
        "fell by about 0.1 for every 2 K lower design temperature, and houses whose radiators "
        "needed supply water above 55 °C had a median SPF 0.4 lower than the rest.",
        [], doi="10.5555/njbp.2022.0931",
    ),
    Source(
        "nhpa2022", 2022, "2022-10-12", "Nordic Heat Pump Association (news desk)",
        "What 212 heat pumps taught us: notes from the Nordic field-study session",
        "Nordic Heat Pump Association blog",
        "https://nordicheatpumps.example/news/2022/10/212-heat-pumps", "blog",
        "Conference write-up of the Lindqvist et al. Nordic field study, with the results by "
        "climate zone shown in the talk.",
        "",
        ["In the coldest of the four zones (design temperatures around -25 °C) the median SPF "
         "was 2.4, against 2.9 in the mildest zone.",
         "Electric backup supplied about 12 % of annual heat in the coldest zone.",
         "Houses that replaced two or three of the smallest radiators, so the system could run "
         "at 45-50 °C supply water, gained 0.3-0.5 in SPF."],
    ),
    Source(
        "meridian2024", 2024, "2024-02-20", "Meridian Evaluation Group for Lakeshore Power & Light",
        "Whole-home heat pump retrofit program: impact evaluation, program years 2021-2023",
        "Lakeshore Power & Light, evaluation report",
        "https://www.lakeshorepower.example/evaluations/hp-retrofit-py2021-2023", "report",
        "Utility program evaluation of 1,140 whole-home heat pump retrofits, with a metered "
        "subsample of 96 homes; backup heat share, controls, electrical upgrades.",
        "The program replaced oil, propane and electric-resistance heating with cold-climate "
        "heat pumps in 1,140 homes. In a metered subsample of 96 homes the seasonal COP "
        "averaged 2.6 (range 2.0-3.3) and resistance backup supplied 9 % of heat on average.",
        ["Metered seasonal COP averaged 2.6 (range 2.0-3.3) in the 96-home subsample.",
         "Resistance backup supplied 9 % of heat on average, but 17 % in homes where the "
         "auxiliary-heat lockout was left at the installer default of -10 °C.",
         "22 % of installations had controls misconfigured at the first inspection, most often "
         "backup heat staged on too early.",
         "14 % of homes needed an electrical service upgrade before installation."],
        "Controls set-up was the cheapest lever: correcting lockout and staging settings at a "
        "follow-up visit cut backup use by roughly half in the homes that needed it.",
        sites=96, design_range=(-20, -27), cop_curve=(3.1, 0.05), backup=0.09,
    ),
    Source(
        "sorensen2019", 2019, "2019-06-01", "Sorensen, T. and Abara, N.",
        "Air-source heat pumps in cold climates: a review of field evidence",
        "Renewable Heat Review 11, 55-81",
        "https://rhr.example/2019/sorensen-abara-review", "review",
        "Review of 27 field studies of air-source heat pumps in cold climates published "
        "2008-2018.",
        "We reviewed 27 field studies published between 2008 and 2018. Reported seasonal COPs "
        "ranged from 1.6 to 3.2; most studies did not meter backup heat separately.",
        ["Reported seasonal COPs ranged from 1.6 to 3.2 across 27 studies.",
         "Fewer than half of the studies metered backup heat separately."],
        doi="10.5555/rhr.2019.0055",
    ),
    Source(
        "park2021", 2021, "2021-07-14", "Park, J., Demir, S. and Novak, T.",
        "Measured defrost penalties of variable-speed air-source heat pumps in cold climates",
        "Proceedings of the International Conference on Heat Pump Systems 2021, paper 118",
        "https://ichps.example/2021/papers/118", "article",
        "Field measurements of defrost energy in 22 heat pumps; when defrost costs most and "
        "what demand-defrost control saves.",
        "Defrost energy was measured on 22 variable-speed heat pumps over one winter. Defrost "
        "used 4-12 % of heating-season electricity, most of it between -5 and +2 °C in humid "
        "weather. Demand-defrost controls used 35-45 % less defrost energy than timed defrost.",
        ["Defrost used 4-12 % of heating-season electricity.",
         "Most defrost energy was spent between -5 and +2 °C at high humidity, not in the "
         "coldest weather, when the outdoor air holds little moisture.",
         "Demand-defrost control used 35-45 % less defrost energy than timed defrost."],
        "Outdoor units should be raised above snow level and kept clear of roof run-off; two "
        "units that iced up from dripping gutters had the study's worst defrost penalties.",
        doi="10.5555/ichps.2021.118", sites=22, design_range=(-18, -27), cop_curve=(3.3, 0.05),
        backup=0.05,
    ),
    Source(
        "feld2020", 2020, "2021-03", "Feld, A., Ito, K. and Marchetti, L.",
        "Ducted cold-climate heat pumps in existing homes: eight case studies",
        "Residential Building Systems 33(1), 9-27",
        "https://rbs.example/article/2021/33-1-9", "article",
        "Eight case studies of ducted cold-climate heat pumps replacing furnaces; duct "
        "condition and airflow.",
        "Eight ducted cold-climate heat pumps replacing gas and oil furnaces were monitored. "
        "Leaky or undersized ducts lowered delivered capacity by up to 20 %.",
        ["Leaky or undersized ducts lowered delivered capacity by up to 20 %."],
        doi="10.5555/rbs.2021.0009",
    ),
    Source(
        "greaves2022", 2022, "2022-02-14", "Greaves, L., Amari, K. and Holt, B.",
        "Installation practices and performance gaps: a survey of 612 heat pump installers",
        "Building Services Practice 12(1), 14-31",
        "https://bsp.example/articles/2022/0107", "article",
        "Survey of 612 installers on load calculation, sizing, commissioning and callbacks.",
        "We surveyed 612 heat pump installers about how they size, install and commission "
        "systems in cold climates. Only 38 % carry out a room-by-room heat-loss calculation on "
        "every job, and 41 % usually size the heat pump to match the furnace it replaces.",
        ["38 % of installers carry out a room-by-room heat-loss calculation on every job; 41 % "
         "usually size the heat pump to match the old furnace.",
         "Commissioning checks (refrigerant charge by weight, airflow measurement) were "
         "reported on 54 % of jobs.",
         "Installers with cold-climate training reported callbacks on 7 % of jobs, against "
         "15 % for those without it."],
        "Programs that require a load calculation and a commissioning sheet before paying a "
        "rebate close most of the gap between good and typical practice.",
        doi="10.5555/bsp.2022.0107",
    ),
    Source(
        "ruiz2023", 2023, "2023-08-29", "Ruiz, C., Petrov, I. and Andersen, H.",
        "Retrofitting a 1960s 48-unit apartment block with central air-to-water heat pumps: "
        "the first two winters",
        "Case Studies in Building Energy 7, 100233",
        "https://csbe.example/article/2023/100233", "article",
        "Case study of a cascade of four air-to-water heat pumps in a 48-unit block with a "
        "design temperature of -22 °C; gas boiler kept for peaks.",
        "A cascade of four air-to-water heat pumps replaced most of the gas heating of a "
        "48-unit apartment block (design temperature -22 °C). Over two winters the space-"
        "heating SCOP was 2.7 (2.3 including domestic hot water); the retained gas boiler "
        "covered 8 % of heat, and site energy fell by 61 %.",
        ["Space-heating SCOP was 2.7, or 2.3 including domestic hot water.",
         "The retained gas boiler covered 8 % of annual heat, all of it on days below -15 °C.",
         "Site energy use fell by 61 % against the three winters before the retrofit.",
         "Supply water temperature was lowered from 80 to 55 °C after the radiators in 30 % of "
         "the flats were replaced."],
        "Keeping the old boiler for peaks let the heat pumps be sized for 70 % of the design "
        "load, which cut the capital cost by about a quarter.",
        doi="10.5555/csbe.2023.100233", sites=1, design_range=(-22, -22),
        cop_curve=(3.15, 0.045), backup=0.08,
    ),
    Source(
        "tran2023", 2023, "2023-03-08", "Tran, M.",
        "Low-ambient capacity: what the ratings don't tell you",
        "HVAC Practice Journal, March 2023",
        "https://hvacpractice.example/2023/03/low-ambient-capacity", "blog",
        "Trade-journal article on reading capacity tables for cold sites and sizing at the "
        "design temperature.",
        "",
        ["Nameplate capacity is measured at +8.3 °C; at -25 °C many cold-climate units deliver "
         "55-75 % of it.",
         "Size so that the unit's maximum capacity at the design temperature covers at least "
         "90 % of the design heat load; variable-speed compressors keep the mild-weather "
         "penalty of that sizing small."],
    ),
    Source(
        "cchpc2023", 2023, "2023-10-02", "Cold Climate Heat Pump Council",
        "Sizing and selecting cold-climate heat pumps: design guide, 2nd edition",
        "Design guide series, no. 4", "https://cchpc.example/guides/sizing-2nd-edition",
        "guide",
        "Industry design guide: heat-loss calculation, balance point, choosing capacity at "
        "the design temperature, backup heat and lockout settings.",
        "",
        ["Start from a room-by-room heat-loss calculation; never size from the old equipment.",
         "Choose a unit whose maximum capacity at the design temperature meets the design load, "
         "or plan and size the backup heat explicitly.",
         "Set the auxiliary-heat lockout at or below -15 °C unless the unit is "
         "capacity-limited above that; staging backup on a timer wastes energy."],
    ),
    Source(
        "whitcombe2024", 2024, "2024-01-22", "Whitcombe, R. and Osei, E.",
        "Electrical service upgrades for residential heat pump retrofits: costs and alternatives",
        "Energy Policy Letters 6, 45-58",
        "https://epl.example/articles/2024/0045", "article",
        "Costs of electrical service upgrades in 410 heat pump retrofits and how often load "
        "management avoided them.",
        "We collected costs for 410 heat pump retrofits that needed more electrical capacity. "
        "The median service upgrade cost USD 2,300 (range 900-6,800). Load-management devices "
        "avoided a service upgrade in 40 % of the cases where they were tried.",
        ["The median service upgrade cost USD 2,300 (range 900-6,800).",
         "Load-management devices (circuit sharing, smart panels) avoided the upgrade in 40 % "
         "of the cases where they were tried.",
         "Homes with 60-100 A services were the most affected."],
        doi="10.5555/epl.2024.0045",
    ),
    Source(
        "kowalczyk2022", 2022, "2022-06-07", "Kowalczyk, A. and Brennan, F.",
        "Heat pumps and indoor comfort in retrofitted social housing",
        "Housing and Energy Research 15(2), 133-150",
        "https://her.example/articles/2022/0133", "article",
        "86 social-housing homes after heat pump retrofits: comfort, satisfaction, and how "
        "thermostat habits drive backup heat.",
        "We followed 86 social-housing homes for a year after heat pump retrofits. 78 % of "
        "tenants who received a home visit and written guidance were satisfied with comfort. "
        "Deep night setbacks triggered backup heat during morning recovery; homes kept at a "
        "steady setpoint used about half as much backup heat.",
        ["78 % of tenants who had a home visit and written guidance were satisfied, against "
         "52 % of those who only received the manual.",
         "Deep night setbacks triggered backup heat during morning recovery; steady setpoints "
         "cut backup use by about half."],
        "Tenant guidance should be part of the installation contract, not an afterthought.",
        doi="10.5555/her.2022.0133", sites=86, design_range=(-18, -24), cop_curve=(3.25, 0.05),
        backup=0.07,
    ),
    Source(
        "agri2023", 2023, "2023-11-15", "Aurora Grid Research Institute",
        "Winter peak impacts of residential heat pumps",
        "Aurora Grid Research Institute, research report",
        "https://agri.example/reports/2023/winter-peak-heat-pumps", "report",
        "How much residential heat pumps add to winter peak demand, and how much of it comes "
        "from resistance backup.",
        "Using metered data from 1,800 homes, we estimated the contribution of heat pumps to "
        "winter peak demand. On the coldest days, homes relying on resistance backup drew two "
        "to three times the peak load of homes with right-sized cold-climate units.",
        ["On the coldest days, homes relying on resistance backup drew two to three times the "
         "peak load of homes with right-sized cold-climate units.",
         "Controls that cap resistance backup during grid peaks cut the coincident peak by "
         "about 30 % with no comfort complaints."],
        sites=1800, design_range=(-20, -30), cop_curve=(3.1, 0.05), backup=0.11,
    ),
    Source(
        "decker2022", 2022, "2022-03-18", "Decker, H. and Lunde, R.",
        "Hybrid heat pumps with existing boilers: field results from 64 homes",
        "Applied Residential Energy 4(1), 22-39",
        "https://are.example/articles/2022/0022", "article",
        "Heat pumps added to existing oil and propane boilers, with the boiler taking over "
        "below a switchover temperature; share of heat and emissions.",
        "We monitored 64 homes where an air-source heat pump was added to an existing oil or "
        "propane boiler, which took over below a switchover temperature of -10 to -15 °C. The "
        "heat pump supplied 78-92 % of annual heat and emissions fell by 55-70 % against "
        "boiler-only heating.",
        ["The heat pump supplied 78-92 % of annual heat, with the boiler taking over below "
         "-10 to -15 °C.",
         "Emissions fell by 55-70 % against boiler-only heating; installed cost was about 40 % "
         "lower than a whole-home heat pump sized for the design load."],
        "Hybrids suit homes whose electrical service or distribution system cannot support a "
        "full-size heat pump yet.",
        doi="10.5555/are.2022.0022", sites=64, design_range=(-21, -28), cop_curve=(3.2, 0.05),
        backup=0.15,
    ),
    Source(
        "bhrc2021", 2021, "2021-04-26", "Boreal Housing Research Centre",
        "Seasonal performance of cold-climate heat pumps in 12 northern homes "
        "(technical report BHRC-TR-2021-03)",
        "Boreal Housing Research Centre, technical report",
        "https://bhrc.example/publications/BHRC-TR-2021-03.pdf", "report",
        "Open-access technical report: seasonal performance factor and backup share in 12 "
        "homes with design temperatures of -28 to -33 °C.",
        "Twelve homes with design temperatures between -28 and -33 °C were monitored for a "
        "full year. The seasonal performance factor including backup ranged from 2.2 to 2.8, "
        "and backup heat supplied 15-30 % of annual heat at the coldest sites.",
        ["SPF including backup ranged from 2.2 to 2.8.",
         "Backup heat supplied 15-30 % of annual heat at the coldest sites; the two homes with "
         "units sized at the design temperature stayed below 8 %."],
        sites=12, design_range=(-28, -33), cop_curve=(3.0, 0.05), backup=0.2,
    ),
]}

SCOP_RANGES = {"marsh2023": (2.3, 3.3), "npeo2021": (2.4, 3.1), "meridian2024": (2.0, 3.3),
               "park2021": (2.5, 3.2), "kowalczyk2022": (2.4, 3.2), "decker2022": (2.6, 3.4),
               "bhrc2021": (2.2, 2.8), "glec2018": (2.1, 2.7), "agri2023": (2.2, 3.2)}

_INTRO_SENTENCES = [
    "Air-source heat pumps have become the default replacement for fossil heating in many "
    "building programs, yet their performance in places with long, cold winters is still "
    "argued about.",
    "Manufacturers publish capacity and efficiency at standard rating points, usually 8.3 °C "
    "and -8.3 °C, sometimes -15 °C; hardly any publish data for colder conditions.",
    "Seasonal efficiency in occupied homes often differs from rated values because of sizing, "
    "controls, defrost and the way occupants use their thermostats.",
    "Most earlier field studies in cold regions monitored single-speed equipment installed "
    "before 2016 and found seasonal COPs well below those of milder climates.",
    "Variable-speed compressors and vapour-injection cycles have since pushed the useful "
    "operating range of air-source units to -25 °C and below.",
    "Programs that pay for retrofits need to know how much backup heat remains necessary, "
    "because backup heat drives both running costs and winter peak demand.",
    "Utilities in the region have started to plan for a winter-peaking system as heating "
    "electrifies.",
    "For building owners the question is less whether heat pumps work in the cold than how to "
    "specify and install them so that they do.",
    "Comparisons often mix seasonal COP, which leaves backup heat out, with seasonal "
    "performance factor, which counts it; we report both where the data allow.",
    "Much of the housing stock concerned was built before 1980, with modest insulation and "
    "with radiators or ducts sized for high-temperature boilers and furnaces.",
]
_METHOD_SENTENCES = [
    "Heat delivered was measured on the indoor side with {meter}; the outdoor unit, indoor "
    "unit and backup heater were metered separately at one-minute resolution.",
    "Outdoor temperature and humidity were logged at each site with shielded sensors and "
    "checked against the nearest weather station.",
    "Gaps longer than two hours ({gap} % of site-hours) were excluded; shorter gaps were "
    "filled by linear interpolation.",
    "Seasonal COP is heat delivered divided by electricity used from October to April; the "
    "text says where backup heat is included.",
    "Design temperatures are the 99 % heating design dry-bulb values of the nearest weather "
    "station.",
    "Occupants kept control of their thermostats; setpoints were recorded but never changed "
    "by the study team.",
    "Sites were recruited through a utility rebate program and were not chosen for good "
    "installation quality.",
]
_DISCUSSION_SENTENCES = [
    "The results are not a ceiling: several of the weakest installations had faults that a "
    "service visit could fix.",
    "Installation and controls mattered as much as equipment: the same model appears near both "
    "ends of the range.",
    "One or two winters contain few design-temperature events, so the coldest-hour results rest "
    "on a small number of hours.",
    "A larger and longer sample would be needed to separate the effect of climate from that of "
    "the building.",
    "The findings agree with laboratory data showing steep capacity loss below -20 °C for some "
    "units and much less for others.",
]
_SURNAMES = ["Albrecht", "Bjornsson", "Castellano", "Dubois", "Eriksen", "Fujimoto", "Gallagher",
             "Hartmann", "Ivanova", "Jensen", "Kaplan", "Laurent", "Mbeki", "Nakamura", "Olsen",
             "Pereira", "Quigley", "Rasmussen", "Schultz", "Tanaka", "Underwood", "Virtanen",
             "Weber", "Yilmaz", "Zhou"]
_REF_TOPICS = ["Seasonal performance of air-source heat pumps in {place}",
               "Defrost control strategies for variable-speed heat pumps",
               "Occupant behaviour and heat pump efficiency",
               "Capacity modulation in cold-climate heat pumps",
               "Monitoring protocols for residential heat pump field trials",
               "Heat pump retrofits in pre-1980 detached houses",
               "Electric backup heat and winter peak demand",
               "Low-temperature radiators in heat pump retrofits",
               "Vapour-injection compressors at low ambient temperature",
               "Uncertainty in field measurements of heat delivered",
               "Sizing rules for heat pumps replacing fossil boilers",
               "Cost-effectiveness of heat pump programs in cold regions"]
_REF_PLACES = ["Finland", "Quebec", "Minnesota", "Norway", "Hokkaido", "Alberta", "Maine",
               "northern Sweden", "Poland", "Vermont"]
_REF_VENUES = ["Energy and Buildings Review", "Journal of Building Thermal Systems",
               "Applied Residential Energy", "Building Services Practice",
               "International Journal of Heat Pump Research", "Renewable Heat Review",
               "Proceedings of the International Conference on Heat Pump Systems"]

_FILLER_RESULTS = [
    ("The 9 best cold-climate heat pumps of 2024 (buyer's guide)", "homecomfortreviews.example",
     "2024-01-09", "We ranked the top models by capacity at 5 °F, noise and price. Our pick for "
     "most homes..."),
    ("Mini split at -30? Real-world experience thread", "forum.diyheating.example", "2023-01-27",
     "Posted by northwoods_rick: Our unit kept the house at 66 °F until about -22, then the "
     "baseboards kicked in..."),
    ("Heat pump rebates in Eastvale County: what you can get", "eastvale-news.example",
     "2024-03-14", "Homeowners can now claim up to $8,000 toward a cold-climate heat pump under "
     "the county's new program..."),
    ("Do heat pumps work in cold weather? Myths and facts", "greenhome-blog.example",
     "2022-11-02", "The short answer is yes. Modern cold-climate units keep heating well below "
     "zero..."),
    ("Cold climate heat pump product list (qualified models)", "cchpc.example", None,
     "Searchable list of models meeting the cold-climate specification, with COP at 5 °F and "
     "capacity maintenance..."),
    ("Why my heat pump bill doubled in January", "savingsdaily.example", "2023-02-15",
     "Readers wrote in about surprise winter bills. The culprit in most cases: auxiliary "
     "heat..."),
    ("Heat pumps vs. oil boilers: a cost comparison", "energyadvice.example", "2021-10-20",
     "Running costs depend on your electricity and oil prices. At current rates..."),
    ("Installer training: cold-climate heat pump certificate", "tradeacademy.example", None,
     "A two-day course covering load calculation, line sets, commissioning and controls "
     "setup..."),
    ("Video: inside a heat pump at -25 °C", "videos.techexplained.example", "2023-12-05",
     "We put a heat pump in a climate chamber and watched what happens to the refrigerant..."),
    ("Heat pumps in Norway: how a cold country went electric", "worldenergy-mag.example",
     "2022-05-30", "More than 60 % of Norwegian detached houses now have a heat pump..."),
    ("Ask an expert: should I keep my furnace as backup?", "homeownerqa.example", "2021-12-11",
     "It depends on your climate, your electrical panel and the condition of the furnace..."),
    ("Manufacturer datasheet: cold-climate ducted series (PDF)", "hvac-maker.example", None,
     "Rated heating capacity at 47 °F, 17 °F and 5 °F. Extended capacity tables on request..."),
    ("Heat pump noise and defrost: what neighbours hear", "quiethomes.example", "2023-06-19",
     "Defrost cycles can produce a whoosh and a cloud of steam; here is why..."),
    ("State heat pump adoption dashboard", "data.stateenergy.example", "2024-02-01",
     "Installed cold-climate heat pumps by county and year, updated quarterly..."),
    ("Panel upgrades: the hidden cost of electrification", "buildingnews.example", "2023-09-07",
     "Contractors say one in five retrofits runs into an undersized electrical service..."),
    ("Air-to-water heat pumps explained", "heatinginfo.example", "2021-03-25",
     "Unlike ductless units, air-to-water heat pumps feed a wet heating system..."),
    ("Retrofit case study: 1950s bungalow goes all-electric", "retrofitstories.example",
     "2022-08-16", "The owners replaced a 30-year-old oil boiler with a 3-ton cold-climate "
     "unit..."),
    ("Cold climate heat pump specification v4.0", "cchpc.example", "2021-01-12",
     "Technical requirements: COP at 5 °F of at least 1.75, capacity at 5 °F of at least 70 % "
     "of rated..."),
]

RESEARCH_SYSTEM = prose(
    """
    You research questions for the sustainability office of the Eastvale Housing Authority
    and write short, well-sourced reports for its board. You have four tools: web_search,
    read_page (the readable text of a web page), fetch_pdf (the text of a PDF) and
    lookup_doi (bibliographic metadata, including publication dates, for a DOI).

    Prefer primary evidence: field monitoring, laboratory tests, program evaluations. Use
    trade articles and guides for practice advice only. Check publication dates when a page
    does not show one clearly. Every number in the report needs a citation.

    The report: at most one page (about 450 words), one short section per question asked,
    numeric ranges with bracketed citations [n], a numbered reference list giving each
    source's year, and a one-line note of anything you could not access.
    """
)

RESEARCH_TOOLS = [
    tool(
        "web_search",
        "Search the web. Returns up to `num_results` results, each with title, URL, site, "
        "publication date when the search index knows it (otherwise null) and a snippet.",
        {"query": {"type": "string"},
         "num_results": {"type": "integer", "minimum": 1, "maximum": 20, "default": 8}},
        ["query"],
    ),
    tool(
        "read_page",
        "Fetch a web page and return its readable text (navigation, ads and scripts removed), "
        "with the page's title, URL and the date it shows, if any.",
        {"url": {"type": "string", "format": "uri"}},
        ["url"],
    ),
    tool(
        "fetch_pdf",
        "Download a PDF and return its text, page by page. Fails with the HTTP status and the "
        "server's message when the PDF cannot be downloaded.",
        {"url": {"type": "string", "format": "uri"},
         "pages": {"type": "string", "description": "Page range such as '1-5' (default: all)."}},
        ["url"],
    ),
    tool(
        "lookup_doi",
        "Look up a DOI in the bibliographic registry: title, authors, journal, publisher, "
        "online and print publication dates, type and open-access status.",
        {"doi": {"type": "string", "description": "A DOI such as 10.5555/abc.2022.0001."}},
        ["doi"],
    ),
]


def _search(rng: random.Random, query: str, keys: list[str], fillers: int,
            extra: list[dict] | None = None) -> dict:
    """A search engine's answer: the named sources in order, with filler pages mixed in."""
    results = list(extra or [])
    for key in keys:
        source = SOURCES[key]
        shows_date = source.kind not in ("guide",) and key not in ("feld2020",)
        results.append({"title": source.title, "url": source.url,
                        "site": source.url.split("/")[2],
                        "published": source.date if shows_date else None,
                        "snippet": source.snippet})
    for title, site, date, snippet in rng.sample(_FILLER_RESULTS, fillers):
        slug = "-".join(word.strip("?:.,()'").lower() for word in title.split()[:6])
        results.insert(rng.randint(1, len(results)), {
            "title": title, "url": f"https://{site}/{slug}", "site": site,
            "published": date, "snippet": snippet})
    for rank, result in enumerate(results, start=1):
        result["rank"] = rank
    return {"query": query, "total_estimated": rng.randint(18_000, 940_000),
            "results": [{k: r[k] for k in ("rank", "title", "url", "site", "published", "snippet")}
                        for r in results]}


def _references(rng: random.Random, year: int, count: int, include: list[str]) -> list[str]:
    refs = []
    for key in include:
        source = SOURCES[key]
        refs.append(f"{source.authors} ({source.year}). {source.title}. {source.venue}.")
    while len(refs) < count:
        authors = rng.sample(_SURNAMES, rng.randint(1, 3))
        names = ", ".join(f"{name}, {rng.choice('ABCDEFGHJKLMNPRST')}." for name in authors)
        topic = rng.choice(_REF_TOPICS).format(place=rng.choice(_REF_PLACES))
        first = rng.randint(1, 600)
        refs.append(f"{names} ({rng.randint(2009, year - 1)}). {topic}. {rng.choice(_REF_VENUES)}, "
                    f"{rng.randint(4, 60)}, {first}-{first + rng.randint(8, 24)}.")
    rng.shuffle(refs)
    return [f"[{i}] {ref}" for i, ref in enumerate(refs, start=1)]


def _site_table(rng: random.Random, source: Source) -> str:
    low, high = SCOP_RANGES.get(source.key, (2.4, 3.2))
    shown = min(source.sites, 12)
    kinds = ["ducted VS", "ductless multi-head", "ductless single-head", "ducted VS + coil"]
    rows = ["| Site | Climate | Design T (°C) | Floor area (m²) | Built | System | Rated kW | "
            "Seasonal COP |", "|---|---|---|---|---|---|---|---|"]
    cops = sorted(round(rng.uniform(low, high), 1) for _ in range(shown - 2)) + [low, high]
    rng.shuffle(cops)
    for i in range(shown):
        design = rng.randint(min(source.design_range), max(source.design_range))
        rows.append(f"| S{i + 1:02d} | {rng.choice(['inland', 'lake shore', 'upland', 'valley'])} "
                    f"| {design} | {rng.randint(85, 240)} | {rng.randint(1948, 1992)} | "
                    f"{rng.choice(kinds)} | {rng.choice([7.0, 8.8, 10.5, 12.3, 14.1])} | "
                    f"{cops[i]:.1f} |")
    title = (f"Table 1. Sites (first {shown} of {source.sites})" if source.sites > shown
             else f"Table 1. Sites ({source.sites})")
    return title + "\n" + "\n".join(rows)


def _monthly_table(rng: random.Random, source: Source) -> tuple[str, float]:
    shift = (sum(source.design_range) / 2 + 25) / 3
    temps = [4.1, -3.2, -10.8, -14.6, -12.9, -6.1, 1.8]
    c0, c1 = source.cop_curve
    rows = ["| Month | Mean outdoor T (°C) | Heat delivered (kWh/site) | Electricity (kWh/site) | "
            "COP (heat pump only) | Backup share (%) |", "|---|---|---|---|---|---|"]
    heat_total = elec_total = 0.0
    for month, base in zip(["Oct", "Nov", "Dec", "Jan", "Feb", "Mar", "Apr"], temps, strict=True):
        temp = base + shift + rng.uniform(-0.8, 0.8)
        cop = max(1.3, c0 + c1 * temp + rng.uniform(-0.06, 0.06))
        heat = (18 - temp) * rng.uniform(58, 66) * (1.4 if source.sites == 1 else 1.0)
        elec = heat / cop
        backup = max(0.0, source.backup * (1 + (-temp - 8) / 10) * 100) if temp < -4 else 0.0
        heat_total += heat
        elec_total += elec
        rows.append(f"| {month} | {temp:.1f} | {heat:,.0f} | {elec:,.0f} | {cop:.2f} | "
                    f"{backup:.1f} |")
    pooled = heat_total / elec_total
    return "Table 2. Monthly means across sites\n" + "\n".join(rows), pooled


def _performance_map(rng: random.Random) -> str:
    temps = [8.3, 0.0, -8.3, -15.0, -20.0, -25.0, -28.0, -30.0]
    rows = ["| Unit | " + " | ".join(f"{t:+.1f} °C" for t in temps) + " |",
            "|---|" + "---|" * len(temps)]
    cap_rows = list(rows)
    cop15 = [1.9, 2.0, 2.1, 2.3, 2.4, 2.5]
    cop25 = [1.4, 1.5, 1.6, 1.6, 1.7, 1.8]
    cap25 = [0.58, 0.63, 0.67, 0.72, 0.77, 0.81]
    order = list(range(6))
    rng.shuffle(order)
    for unit, i in zip("ABCDEF", order, strict=True):
        slope = (cop15[i] - cop25[i]) / 10
        cops, caps = [], []
        for t in temps:
            if t >= -15:
                cop = cop15[i] + (t + 15) * rng.uniform(0.075, 0.095)
            else:
                cop = cop15[i] + (t + 15) * slope
            lockout = t <= -30 and unit in "BE" or (t <= -28 and unit == "E")
            cops.append("stop" if lockout else f"{cop:.2f}")
            cap = 1.0 if t >= 8 else 1.0 - (8.3 - t) / 33.3 * (1 - cap25[i])
            caps.append("stop" if lockout else f"{cap:.2f}")
        rows.append(f"| {unit} | " + " | ".join(cops) + " |")
        cap_rows.append(f"| {unit} | " + " | ".join(caps) + " |")
    return ("Table 2. COP at maximum compressor speed\n" + "\n".join(rows) +
            "\n\nTable 3. Maximum capacity relative to capacity at 8.3 °C\n" + "\n".join(cap_rows) +
            "\n'stop': the unit shut down on low-ambient protection and did not restart within "
            "30 minutes.")


def _page_header(source: Source) -> str:
    shown_date = source.date if source.kind != "guide" else f"{source.date[:7]} (edition date)"
    lines = [f"URL: {source.url}", f"Title: {source.title}", f"Date shown on page: {shown_date}",
             "", source.title, source.authors, source.venue]
    if source.doi:
        lines.append(f"doi:{source.doi}")
    return "\n".join(lines)


def _read_page(rng: random.Random, source: Source) -> str:
    """The readable text of a source's web page, shaped by what kind of page it is."""
    if source.kind == "landing":
        return _landing_page(rng, source)
    if source.kind == "blog":
        return _blog_page(rng, source)
    if source.kind == "guide":
        return _guide_page(rng, source)
    intro = rng.sample(_INTRO_SENTENCES, 5)
    parts = [_page_header(source)]
    if source.kind in ("article", "review"):
        parts += _article_front_matter(rng, source)
    parts += ["", "Abstract", source.abstract]
    if source.kind == "article":
        parts += ["", "Highlights"] + [f"- {finding.split(';')[0].rstrip('.')}."
                                       for finding in source.findings[:3]]
    parts += ["", "1. Introduction", " ".join(intro[:3]), " ".join(intro[3:]), "", "2. Methods"]
    meter = rng.choice(["ultrasonic heat meters", "paired supply and return temperature sensors "
                        "and airflow stations", "calibrated heat meters (class 2)"])
    method = [s.format(meter=meter, gap=f"{rng.uniform(1.5, 4.5):.1f}")
              for s in rng.sample(_METHOD_SENTENCES, 4)]
    parts.append(" ".join(method))
    if source.key == "hollis2022":
        parts[-1] = ("Each unit was installed in a two-room psychrometric chamber and run at "
                     "maximum compressor speed and at 50 % speed at eight outdoor temperatures "
                     "from +10 to -30 °C, 60-80 % relative humidity, indoor 20 °C. Heat was "
                     "measured on the air side with a code tester; uncertainty of COP is about "
                     "4 %. Each point is the mean of three one-hour steady periods, defrost "
                     "excluded.")
    if source.sites > 1:
        parts += ["", _site_table(rng, source)]
    parts += ["", "3. Results", " ".join(source.findings)]
    if source.key == "hollis2022":
        parts += ["", _performance_map(rng)]
    elif source.sites >= 1:
        table, pooled = _monthly_table(rng, source)
        parts += ["", table, f"Pooled over all sites and months, the heat-pump-only COP was "
                              f"{pooled:.2f}."]
    if source.kind == "review":
        parts += ["", _review_table(rng)]
    extra = _EXTRA_TABLES.get(source.key)
    if extra:
        parts += ["", extra(rng)]
    parts += ["", f"Figure {rng.randint(2, 4)}. " + rng.choice(_FIGURE_CAPTIONS)]
    parts += ["", "4. Discussion",
              (source.discussion + " " if source.discussion else "")
              + " ".join(rng.sample(_DISCUSSION_SENTENCES, 2)),
              ""]
    if source.kind in ("article", "report"):
        parts += ["Data availability: " + rng.choice([
            "anonymised hourly data are available from the authors on reasonable request.",
            "site-level seasonal results are in the supplementary material; hourly data are "
            "withheld to protect occupants' privacy.",
            "the monitoring data set is archived with the funding agency and available under a "
            "data-sharing agreement."]),
            "Funding: " + rng.choice([
            "state energy research program, grant ER-" + str(rng.randint(1000, 9999)) + ".",
            "the utility's research and development fund; the funder had no role in the analysis.",
            "a public housing innovation grant."]), ""]
    parts.append("References")
    include = [k for k in ("glec2018", "sorensen2019") if SOURCES[k].year < source.year]
    parts += _references(rng, source.year, rng.randint(14, 20), include[:1])
    return "\n".join(parts)


_FIGURE_CAPTIONS = [
    "Hourly COP against outdoor temperature, all sites; the line is a least-squares fit.",
    "Share of heat from backup against the ratio of heat pump capacity at design temperature "
    "to design heat load.",
    "Daily heat delivered against heating degree days, by site.",
    "Cumulative distribution of hours by outdoor temperature over the monitoring period.",
    "Defrost cycles per hour against outdoor temperature and relative humidity.",
]

_AFFILIATIONS = ["Department of Civil and Building Engineering, Northgate University",
                 "Institute for Building Energy Systems, Lakehead Technical University",
                 "Centre for Housing Research, University of Eastmoor",
                 "Applied Thermal Sciences Group, Fjordland Institute of Technology",
                 "School of Architecture and Environment, Ridgeway College"]


def _article_front_matter(rng: random.Random, source: Source) -> list[str]:
    published = datetime.strptime(source.date if len(source.date) == 10 else source.date + "-15",
                                  "%Y-%m-%d")
    received = published - timedelta(days=rng.randint(150, 320))
    accepted = published - timedelta(days=rng.randint(20, 60))
    return ["Affiliations: " + "; ".join(rng.sample(_AFFILIATIONS, 2)),
            f"Received {received:%d %B %Y}; accepted {accepted:%d %B %Y}; published online "
            f"{published:%d %B %Y}",
            "Keywords: " + ", ".join(rng.sample(
                ["cold climate", "air-source heat pump", "field monitoring", "seasonal COP",
                 "backup heat", "retrofit", "defrost", "sizing", "residential"], 5))]


def _table(title: str, header: list[str], rows: list[list[str]]) -> str:
    lines = [title, "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _marsh_sizing(rng: random.Random) -> str:
    return _table("Table 3. Backup share by sizing ratio (capacity at design T / design load)",
                  ["Sizing ratio", "Houses", "Median backup share (%)", "Range (%)"],
                  [["< 0.8", "5", "21", "9-24"], ["0.8-1.0", "19", "7", "1-15"],
                   ["> 1.0", "24", "3", "0-9"]])


def _npeo_models(rng: random.Random) -> str:
    ratios = [0.52, 0.57, 0.61, 0.64, 0.68]
    rng.shuffle(ratios)
    return _table("Table 3. Measured capacity at -25 °C relative to 8.3 °C, by model",
                  ["Model", "Homes", "Nominal kW", "Capacity ratio at -25 °C",
                   "Lowest hourly COP"],
                  [[f"M{i + 1}", str(rng.randint(4, 9)), f"{rng.choice([5.3, 7.0, 8.8])}",
                    f"{ratio:.2f}", f"{rng.uniform(1.3, 1.7):.1f}"]
                   for i, ratio in enumerate(ratios)])


def _park_bins(rng: random.Random) -> str:
    rows = []
    for low in range(6, -27, -4):
        share = 11.0 if -6 <= low <= 2 else (6.0 if low > 2 else max(1.5, 7 + low / 4))
        rows.append([f"{low - 4} to {low}", str(rng.randint(120, 900)),
                     f"{rng.uniform(0.3, 1.4):.2f}", f"{share + rng.uniform(-1, 1):.1f}"])
    return _table("Table 3. Defrost by outdoor temperature bin (°C)",
                  ["Bin", "Hours", "Defrosts per hour", "Defrost share of electricity (%)"], rows)


def _greaves_practices(rng: random.Random) -> str:
    rows = []
    for practice, trained, untrained in [("Room-by-room heat-loss calculation, every job", 61, 24),
                                         ("Usually sizes to match the old furnace", 22, 53),
                                         ("Refrigerant charge checked by weight", 71, 44),
                                         ("Airflow or water flow measured", 66, 38),
                                         ("Backup lockout set and recorded", 63, 35),
                                         ("Callbacks within first winter", 7, 15)]:
        overall = (trained * 231 + untrained * 381) / 612
        rows.append([practice, f"{overall:.0f}", str(trained), str(untrained)])
    return _table("Table 2. Practices reported (% of respondents)",
                  ["Practice", "All (n=612)", "Cold-climate trained (n=231)",
                   "Not trained (n=381)"], rows)


def _whitcombe_costs(rng: random.Random) -> str:
    return _table("Table 2. Electrical upgrades by existing service size",
                  ["Existing service", "Retrofits", "Needed upgrade (%)", "Median cost (USD)",
                   "Interquartile range (USD)"],
                  [["60 A", "58", "91", "2,900", "2,100-4,300"],
                   ["100 A", "187", "64", "2,300", "1,600-3,200"],
                   ["150 A", "96", "22", "1,700", "1,100-2,500"],
                   ["200 A", "69", "6", "1,200", "900-1,800"]])


def _kowalczyk_setpoints(rng: random.Random) -> str:
    return _table("Table 2. Comfort and backup use by thermostat pattern",
                  ["Pattern", "Homes", "Satisfied (%)", "Backup share of heat (%)"],
                  [["Steady setpoint", "41", "81", "4"], ["Setback of 1-3 K", "27", "74", "6"],
                   ["Setback over 3 K", "18", "61", "9"]])


def _agri_peaks(rng: random.Random) -> str:
    rows = []
    for hour in range(0, 24, 3):
        right = rng.uniform(2.1, 3.4) + (0.6 if hour in (6, 18) else 0)
        rows.append([f"{hour:02d}:00-{hour + 3:02d}:00", f"{right:.1f}",
                     f"{right * rng.uniform(2.0, 2.9):.1f}"])
    return _table("Table 2. Mean demand per home on the three coldest days (kW)",
                  ["Hours", "Right-sized cold-climate units", "Units relying on resistance backup"],
                  rows)


def _decker_switchover(rng: random.Random) -> str:
    return _table("Table 3. Heat pump share of annual heat by switchover temperature",
                  ["Switchover (°C)", "Homes", "Heat pump share (%)", "Emission reduction (%)"],
                  [["-5", "9", "71", "48"], ["-10", "22", "78", "55"], ["-12", "17", "85", "62"],
                   ["-15", "16", "92", "70"]])


def _meridian_fuels(rng: random.Random) -> str:
    return _table("Table 3. Program homes by previous heating fuel",
                  ["Previous fuel", "Homes", "Median rated kW", "Service upgrade (%)",
                   "Metered COP (subsample)"],
                  [["Oil", "512", "10.5", "16", "2.5"], ["Propane", "301", "8.8", "12", "2.7"],
                   ["Electric resistance", "327", "8.8", "11", "2.7"]])


def _ruiz_before_after(rng: random.Random) -> str:
    return _table("Table 3. Annual energy before and after the retrofit (whole building)",
                  ["", "Before (3-winter mean)", "After (2-winter mean)", "Change"],
                  [["Gas (MWh)", "742", "61", "-92 %"], ["Electricity (MWh)", "118", "271", "+130 %"],
                   ["Site energy (MWh)", "860", "332", "-61 %"],
                   ["Energy cost (index)", "100", "83", "-17 %"]])


_EXTRA_TABLES: dict[str, Callable[[random.Random], str]] = {
    "marsh2023": _marsh_sizing, "npeo2021": _npeo_models, "park2021": _park_bins,
    "greaves2022": _greaves_practices, "whitcombe2024": _whitcombe_costs,
    "kowalczyk2022": _kowalczyk_setpoints, "agri2023": _agri_peaks,
    "decker2022": _decker_switchover, "meridian2024": _meridian_fuels,
    "ruiz2023": _ruiz_before_after,
}


def _review_table(rng: random.Random) -> str:
    rows = ["Table 3. Field studies reviewed", "| Study | Year | Country/region | Homes | "
            "Equipment | Seasonal COP | Backup metered |", "|---|---|---|---|---|---|---|"]
    for i in range(1, 28):
        year = rng.randint(2008, 2018)
        low = rng.uniform(1.6, 2.6)
        rows.append(f"| R{i:02d} | {year} | {rng.choice(_REF_PLACES)} | {rng.randint(3, 120)} | "
                    f"{rng.choice(['single-speed', 'two-stage', 'variable-speed'])} | "
                    f"{low:.1f}-{min(3.2, low + rng.uniform(0.2, 0.8)):.1f} | "
                    f"{rng.choice(['yes', 'no', 'no', 'partly'])} |")
    return "\n".join(rows)


def _landing_page(rng: random.Random, source: Source) -> str:
    refs = _references(rng, source.year, 10, ["sorensen2019"])
    return "\n".join([
        _page_header(source),
        "Research article | First published: 3 November 2022 | Issue date: December 2022",
        "", "Abstract", source.abstract, "",
        "Keywords: air-to-water heat pump; field measurement; seasonal performance factor; "
        "cold climate; emitter temperature; backup heat",
        "", "Access options",
        "- Log in through your institution",
        "- Purchase this article: PDF, EUR 39.95 (24-hour access)",
        "- Subscribe to Nordic Journal of Building Physics",
        "", "Full text: available to subscribers. Figures 1-9 and Tables 1-6 are in the full text.",
        "Supplementary material: Table S1-S4 (subscribers only).",
        "", "Article metrics: 1,284 downloads; cited by 31 (registry count).",
        "", "References (first 10 of 58)"] + refs + [
        "", "Related articles",
        "- Hourly load profiles of air-to-water heat pumps in Nordic houses (2023)",
        "- Emitter upgrades before heat pump retrofits: a cost-benefit analysis (2021)",
        "- Domestic hot water and heat pump efficiency (2020)",
    ])


def _blog_page(rng: random.Random, source: Source) -> str:
    if source.key == "nhpa2022":
        body = [
            "The session on the Nordic field study was the best attended of the conference's "
            "second day. Presenting for the team, Maria Lindqvist walked through results from "
            "212 air-to-water heat pumps monitored in single-family houses across four climate "
            "zones, the largest data set of its kind so far.",
            "The headline numbers are in the paper: a median seasonal performance factor of 2.7 "
            "with backup and hot water included. What the talk added was the breakdown by "
            "climate zone, which several delegates had asked for.",
        ] + source.findings + [
            "Asked about sizing, Lindqvist said the houses with the lowest backup use had units "
            "chosen for their capacity at the local design temperature, not at the rating "
            "point. 'Most of the bad results were bad installations, not bad machines,' she "
            "said.",
            "Slides are available to association members. The paper itself appeared in the "
            "Nordic Journal of Building Physics in November.",
        ]
    else:
        body = [
            "Every cold-climate heat pump datasheet leads with a capacity figure, and almost "
            "every installer reads it as the capacity the unit will deliver on the coldest "
            "night. It is not.",
        ] + source.findings + [
            "Take a house with a design heat load of 9 kW at -25 °C. A unit with a nameplate "
            "of 10.5 kW that keeps 62 % of its capacity at that temperature delivers about "
            "6.5 kW, leaving 2.5 kW for backup heat on the design day. A 12.3 kW unit from a "
            "line that keeps 75 % delivers 9.2 kW and needs none.",
            "Ask manufacturers for extended capacity tables down to your design temperature, "
            "and check whether the figure is at maximum compressor speed or at a rated speed.",
            "Variable-speed units modulate down to 25-35 % of their maximum, so a unit sized "
            "for the design day does not short-cycle in October the way single-speed "
            "equipment did.",
        ]
    if source.key == "nhpa2022":
        table = _table("Results by climate zone (from the talk)",
                       ["Zone", "Typical design T (°C)", "Houses", "Median SPF",
                        "Backup share of heat (%)"],
                       [["1 (coastal south)", "-12", "61", "2.9", "3"],
                        ["2 (inland south)", "-17", "58", "2.8", "5"],
                        ["3 (central)", "-21", "52", "2.6", "8"],
                        ["4 (north)", "-25", "41", "2.4", "12"]])
        texts = ["Great summary, wish the slides were public.",
                 "Did they separate hot water from space heating in the zone breakdown?",
                 "Zone 4 looks a lot like our region. Useful numbers for our next program."]
        related = ["Heat pump sales in the Nordics: 2022 figures",
                   "Emitter upgrades: which radiators to replace first",
                   "Interview: twenty years of monitoring heat pumps",
                   "Our response to the building code consultation",
                   "Members' day 2023: call for speakers"]
    else:
        rows = []
        for model, keep in (("Line A 10.5 kW", 0.62), ("Line B 10.5 kW", 0.69),
                            ("Line C 12.3 kW", 0.75)):
            nominal = float(model.split()[2])
            rows.append([model] + [f"{nominal * (1 - (8.3 - t) / 33.3 * (1 - keep)):.1f}"
                                   for t in (8.3, -8.3, -15, -20, -25)])
        table = _table("Maximum capacity (kW) at outdoor temperature, three 10-12 kW lines",
                       ["Model", "+8.3 °C", "-8.3 °C", "-15 °C", "-20 °C", "-25 °C"], rows)
        texts = ["Same experience here: sizing at the rating point is the most common mistake "
                 "we see.",
                 "Some manufacturers only publish the -25 °C figure at a boost setting the unit "
                 "can't hold for long. Worth asking.",
                 "Good article. Utilities should require the design-temperature figure on "
                 "rebate forms."]
        related = ["Line sets in cold weather: insulation and routing",
                   "Why your heat pump needs a snow stand",
                   "Controls 101: staging backup heat properly",
                   "Load calculations that match the fuel bills",
                   "Ask the engineer: ducted or ductless for an old house?"]
    comments = [f"{rng.choice(_SURNAMES)}_{rng.randint(10, 99)}: {text}" for text in texts]
    return "\n".join([_page_header(source), ""] + body + ["", table] +
                      ["", f"Comments ({len(comments)})"] + comments +
                      ["", "Related posts"] + [f"- {title}" for title in related] +
                      ["", "Tags: heat pumps, field data, cold climate, sizing"])


def _guide_page(rng: random.Random, source: Source) -> str:
    lockouts = ["| Design temperature | Suggested auxiliary-heat lockout | Compressor cut-out |",
                "|---|---|---|"]
    for design in range(-15, -36, -3):
        lockouts.append(f"| {design} °C | {max(design + 5, -25)} °C or lower | "
                        f"manufacturer minimum (often {rng.choice([-25, -28, -30, -31])} °C) |")
    return "\n".join([
        _page_header(source), "",
        "Contents: 1 Heat-loss calculation | 2 Balance point | 3 Selecting capacity | "
        "4 Backup heat | 5 Controls and lockouts | 6 Commissioning checklist", "",
        "1 Heat-loss calculation",
        source.findings[0] + " Use the 99 % design dry-bulb temperature for the site, measured "
        "or documented insulation levels, and a blower-door result where one exists. For "
        "retrofits, fuel records from two winters give a useful check on the calculated load.",
        "", "2 Balance point",
        "Plot the building's heat load against outdoor temperature and the unit's maximum "
        "capacity curve. Where they cross is the thermal balance point; below it, backup heat "
        "or a second unit must make up the difference.",
        "", "3 Selecting capacity", source.findings[1] + " Use extended performance data at "
        "maximum compressor speed; nameplate figures at 8.3 °C overstate cold-weather capacity.",
        "", "4 Backup heat",
        "Backup can be electric resistance (in the air handler or baseboards), the existing "
        "boiler or furnace in a hybrid arrangement, or a second heat pump. Size it for the "
        "shortfall at the design temperature plus a margin for defrost.",
        "", "Worked example: a 1962 storey-and-a-half house at a -24 °C design temperature",
        _guide_example(rng),
        "", "5 Controls and lockouts", source.findings[2], "", "\n".join(lockouts), "",
        "6 Commissioning checklist",
        "- Refrigerant charge by weight, adjusted for line length",
        "- Airflow or water flow measured and recorded",
        "- Outdoor unit raised above expected snow depth, clear of roof run-off",
        "- Auxiliary-heat lockout and staging set and recorded",
        "- Thermostat type compatible with variable-speed operation",
        "- Owner or tenant walked through the controls",
        "", "Edition: 2nd, October 2023. Supersedes the 1st edition (2017).",
    ])


def _guide_example(rng: random.Random) -> str:
    rooms = [("Living room", 28), ("Kitchen", 14), ("Dining", 12), ("Hall and stairs", 9),
             ("Bedroom 1", 15), ("Bedroom 2", 12), ("Bedroom 3", 10), ("Bathroom", 6),
             ("Basement (conditioned)", 60)]
    rows, total = [], 0.0
    for room, area in rooms:
        fabric = area * rng.uniform(38, 52)
        air = area * rng.uniform(12, 20)
        total += fabric + air
        rows.append([room, str(area), f"{fabric:,.0f}", f"{air:,.0f}", f"{fabric + air:,.0f}"])
    rows.append(["Total", str(sum(a for _, a in rooms)), "", "", f"{total:,.0f}"])
    table = _table("Room-by-room heat loss at -24 °C outdoor, 21 °C indoor (W)",
                   ["Room", "Floor area (m²)", "Fabric", "Air leakage", "Total"], rows)
    return (table + f"\nDesign heat load {total / 1000:.1f} kW. A unit keeping 70 % of its "
            f"nameplate at -24 °C needs a nameplate of about {total / 700:.1f} kW to carry the "
            "load alone; with a smaller unit, size the backup for the difference.")


_PUBLISHERS = ["Northgate Scholarly Publishing", "Fjordland Academic", "Lakehead University Press",
               "Eastmoor Science Media"]


def _lookup_doi(source: Source, online: str | None = None) -> dict:
    online = online or source.date
    return {
        "doi": source.doi,
        "title": source.title,
        "authors": [f"{surname}, {initial}." for surname, initial
                    in re.findall(r"([A-Z][\w-]+), ([A-Z])\.", source.authors)],
        "container_title": re.split(r" \d", source.venue)[0].rstrip(","),
        "publisher": _PUBLISHERS[sum(map(ord, source.key)) % len(_PUBLISHERS)],
        "type": "proceedings-article" if "Proceedings" in source.venue else "journal-article",
        "published_online": online,
        "published_print": source.date if online != source.date else None,
        "issued": online,
        "is_open_access": source.key in ("bhrc2021", "npeo2021"),
        "references_count": 30 + len(source.key) * 2,
        "registry_updated": "2024-04-30",
    }


def _bhrc_pdf(rng: random.Random) -> str:
    source = SOURCES["bhrc2021"]
    table, pooled = _monthly_table(rng, source)
    pages = [
        f"[page 1]\n{source.authors}\n{source.title}\nApril 2021\nOpen access. Licensed CC BY 4.0.",
        "[page 2]\nSummary\n" + source.abstract + " The two homes whose units were sized at "
        "the design temperature stayed below 8 %. The results support sizing cold-climate heat "
        "pumps at the design temperature where the electrical service allows it.",
        "[page 3]\n1 Background\n" + " ".join(rng.sample(_INTRO_SENTENCES, 4)),
        "[page 4]\n2 Homes and monitoring\n" + " ".join(
            s.format(meter="heat meters on the refrigerant-to-air coil", gap="2.6")
            for s in rng.sample(_METHOD_SENTENCES, 4)) + "\n\n" + _site_table(rng, source),
        "[page 6]\n3 Results\n" + " ".join(source.findings) + "\n\n" + table +
        f"\nPooled heat-pump-only COP: {pooled:.2f}.",
        "[page 9]\n4 Discussion\n" + " ".join(rng.sample(_DISCUSSION_SENTENCES, 3)) +
        " Homes at the coldest sites relied on baseboard heaters for the hours below the "
        "units' cut-out temperature, which ranged from -28 to -31 °C.",
        "[page 11]\n5 Recommendations\n- Size at the design temperature where the electrical "
        "service allows.\n- Set backup lockouts explicitly at commissioning.\n- Meter backup heat "
        "separately in any future program evaluation.",
        "[page 12]\nReferences\n" + "\n".join(_references(rng, 2021, 9, ["glec2018"])),
    ]
    return (f"fetch_pdf {source.url}\n14 pages, text layer present; pages 5, 7-8, 10, 13-14 are "
            "figures or blank\n\n" + "\n\n".join(pages))


def build_research() -> Transcript:
    t = Transcript("research", seed=2021, system_prompt=RESEARCH_SYSTEM, tools=RESEARCH_TOOLS,
                   indent=2)
    rng = t.rng
    src = SOURCES
    pdf_url = "https://www.njbp.example/doi/pdf/10.5555/njbp.2022.0931"

    def search(query: str, keys: list[str], extra: list[dict] | None = None) -> Call:
        fillers = 8 - len(keys) - len(extra or [])
        return Call("web_search", {"query": query, "num_results": 8},
                    _search(rng, query, keys, fillers, extra))

    def read(key: str) -> Call:
        return Call("read_page", {"url": src[key].url}, _read_page(rng, src[key]))

    def lookup(key: str, online: str | None = None) -> Call:
        return Call("lookup_doi", {"doi": src[key].doi}, _lookup_doi(src[key], online))

    def paywalled_pdf() -> Call:
        return Call("fetch_pdf", {"url": pdf_url}, {
            "error": "http_403", "status": 403, "url": pdf_url, "message": PAYWALL_MESSAGE,
            "request_id": uuid4(rng)})

    t.user(prose(
        """
        I'm preparing a briefing for the Eastvale Housing Authority board on replacing oil and
        propane boilers with air-source heat pumps in our 340 older homes. Our design
        temperature is -24 °C. Please research the evidence and write a one-page report that
        answers four questions:
        1. What seasonal efficiency (seasonal COP or SPF) do cold-climate heat pumps actually
           achieve in field studies?
        2. How do capacity and efficiency fall off at very low temperatures?
        3. How much backup heat is needed, and what kind?
        4. Which installation factors make the biggest difference?

        Cite every claim.
        """
    ))
    t.turn(None, search("cold climate air source heat pump field monitoring seasonal COP",
                        ["glec2018", "marsh2023", "sorensen2019", "npeo2021", "meridian2024"]))
    t.user(prose(
        f"""
        One more thing before you go further: the board threw out last year's report for
        leaning on old field data, so only cite sources {RESEARCH_CONSTRAINT}. Older studies
        can guide your searching, but they must not appear in the report.
        """
    ))
    t.turn(prose(
        f"""
        Understood: every source I cite must be {RESEARCH_CONSTRAINT}. From the first search
        that rules out the 2018 field assessment and the 2019 review; Marsh et al. (2023), the
        2021 Northern Plains report and the 2024 Lakeshore evaluation qualify. Starting with
        Marsh et al.
        """
    ), read("marsh2023"))
    t.turn(None, read("npeo2021"))
    t.turn(None, search("cold climate heat pump laboratory test COP capacity -25 C",
                        ["hollis2022", "tran2023", "feld2020", "sorensen2019"]))
    t.turn(None, read("hollis2022"))
    t.turn(None, search(
        "Lindqvist 2022 air-to-water heat pumps Nordic single-family field performance",
        ["lindqvist2022", "nhpa2022"],
        [{"title": "Field performance of 212 air-to-water heat pumps in Nordic single-family "
                   "houses (PDF)", "url": pdf_url, "site": "www.njbp.example",
          "published": "2022-11-03",
          "snippet": "PDF. Lindqvist M, Berg S, Aalto J, Haugen K. Nordic Journal of Building "
                     "Physics 9(4):311-334..."}]))
    # lap 7: the first of three failures on the same URL
    t.turn(None, paywalled_pdf())
    t.turn(None, Call("read_page", {"url": src["lindqvist2022"].url},
                      _read_page(rng, src["lindqvist2022"])))
    t.turn(None, search("backup heat share electric resistance cold climate heat pump program "
                        "evaluation", ["meridian2024", "bhrc2021", "glec2018", "agri2023"]))
    t.turn(None, read("meridian2024"))
    t.turn(None, Call("fetch_pdf", {"url": src["bhrc2021"].url}, _bhrc_pdf(rng)))
    t.turn(None, search("defrost energy penalty field measurements heat pump cold climate",
                        ["park2021", "feld2020", "sorensen2019"]))
    t.turn(None, read("park2021"))
    t.turn(prose(
        """
        The ducted case-study paper (Feld et al.) shows an issue date of March 2021 but no
        online date. Checking before relying on it.
        """
    ), lookup("feld2020", online="2020-11-30"))
    t.turn(prose(
        """
        Feld et al. first appeared online on 30 November 2020, so it misses the 2021 cut-off
        whatever the issue date says; leaving it out. Next: installation practice.
        """
    ), search("heat pump installer survey sizing load calculation commissioning callbacks",
              ["greaves2022", "kowalczyk2022"]))
    t.turn(None, read("greaves2022"))
    # lap 17: second failure
    t.turn(prose(
        """
        Lindqvist et al. (2022) should break backup share down by climate zone in the full
        paper. Fetching it.
        """
    ), paywalled_pdf())
    t.turn(None, search("multifamily apartment air-to-water heat pump retrofit cold climate case "
                        "study", ["ruiz2023"]))
    t.turn(None, read("ruiz2023"))
    t.turn(prose(
        """
        The 2019 review cannot be cited, but its table of earlier studies may point to newer
        follow-up work.
        """
    ), read("sorensen2019"))
    t.turn(None, search("low ambient capacity retention heat pump sizing at design temperature",
                        ["tran2023", "cchpc2023", "hollis2022"]))
    t.turn(None, read("tran2023"))
    t.turn(None, read("cchpc2023"))
    t.turn(None, lookup("greaves2022"))
    t.turn(None, search("electrical service panel upgrade cost heat pump retrofit load management",
                        ["whitcombe2024"]))
    t.turn(None, read("whitcombe2024"))
    t.turn(None, search("social housing heat pump retrofit tenant comfort thermostat setback "
                        "backup", ["kowalczyk2022"]))
    t.turn(None, read("kowalczyk2022"))
    t.turn(None, search("winter peak demand residential heat pumps resistance backup study",
                        ["agri2023"]))
    t.turn(None, read("agri2023"))
    # lap 31: third failure
    t.turn(prose(
        """
        For a -24 °C design temperature the Nordic paper's results by climate zone are the best
        anchor. Getting the full text.
        """
    ), paywalled_pdf())
    t.turn(None, read("nhpa2022"))
    t.turn(None, search("hybrid heat pump existing boiler field results switchover temperature",
                        ["decker2022"]))
    t.turn(None, read("decker2022"))
    t.turn(None, lookup("hollis2022"))
    t.turn(None, lookup("marsh2023"))
    t.turn(None, lookup("park2021"))
    t.turn(None, search("Northern Plains Energy Office NPEO-2021-07 ductless heat pump report",
                        ["npeo2021"]))
    t.turn(None, lookup("decker2022"))
    t.answer(prose(
        f"""
        **Cold-climate air-source heat pumps: the field evidence** (Eastvale, design
        temperature -24 °C)

        Every source cited was {RESEARCH_CONSTRAINT}; older studies found on the way were used
        only to find newer work.

        **1. Seasonal efficiency in real homes.** Field studies find seasonal COPs between
        about 2.0 and 3.3. Forty-eight houses with design temperatures of -22 to -29 °C reached 2.3-3.3
        with backup included, median 2.8 [1]; 31 ductless systems in a colder climate reached
        2.4-3.1 [2]; 96 metered homes in a utility program averaged 2.6 (2.0-3.3) [3]. Nordic
        air-to-water systems had a median SPF of 2.7 [4], about 2.4 in the zone nearest -25 °C
        [5]; at design temperatures of -28 to -33 °C SPF was 2.2-2.8 [6].

        **2. Deep cold.** In the laboratory, COP was 1.9-2.5 at -15 °C and 1.4-1.8 at -25 °C;
        capacity at -25 °C was 58-81 % of the 8.3 °C rating, and two of six units shut down
        below -28 °C [7]. In homes, capacity at -25 °C was 52-68 % of rated [2] and hourly COP
        near -20 °C averaged 1.8 [1]. Defrost takes 4-12 % of winter electricity, mostly
        between -5 and +2 °C [8].

        **3. Backup heat.** Backup supplied a median 6 % of annual heat, but over 20 % where
        units covered less than 80 % of the design load [1]; 9 % across a program, 17 % where
        lockouts stayed at the -10 °C default [3]; 15-30 % at the coldest sites [6]. Keeping
        the existing boiler in a hybrid let the heat pump supply 78-92 % of heat and cut
        emissions by 55-70 % [9]. Resistance backup drives winter peaks, two to three times
        those of right-sized units [10]; steady thermostat setpoints halve its use [11].

        **4. Installation.** Size from a room-by-room heat-loss calculation so that capacity at
        the design temperature meets the load [12, 13]; only 38 % of installers always do this
        [14]. Set and record backup lockouts at commissioning: 22 % of program installs were
        misconfigured [3]. Check electrical capacity early: 14 % of homes needed a service
        upgrade [3], median USD 2,300, avoided by load management in 40 % of cases [15]. With
        radiators, bring supply water to 45-55 °C [5, 16]. Brief tenants [11].

        **For Eastvale.** With units sized for -24 °C, expect a seasonal COP of about 2.4-2.8
        and backup of roughly 5-12 % of heat [1, 3, 5]; hybrids suit homes with small
        electrical services [9, 15].

        **References**
        1. Marsh, Okonkwo and Lindahl (2023). Energy and Buildings Review 41(3).
        2. Northern Plains Energy Office (2021). Report NPEO-2021-07.
        3. Meridian Evaluation Group for Lakeshore Power & Light (2024). Program evaluation.
        4. Lindqvist, Berg, Aalto and Haugen (2022). Nordic Journal of Building Physics 9(4).
        5. Nordic Heat Pump Association (2022). Conference write-up of [4].
        6. Boreal Housing Research Centre (2021). Report BHRC-TR-2021-03.
        7. Hollis and Varga (2022). Journal of Building Thermal Systems 18(2).
        8. Park, Demir and Novak (2021). ICHPS 2021, paper 118.
        9. Decker and Lunde (2022). Applied Residential Energy 4(1).
        10. Aurora Grid Research Institute (2023). Winter peak impacts of residential heat pumps.
        11. Kowalczyk and Brennan (2022). Housing and Energy Research 15(2).
        12. Cold Climate Heat Pump Council (2023). Sizing guide, 2nd edition.
        13. Tran (2023). HVAC Practice Journal, March 2023.
        14. Greaves, Amari and Holt (2022). Building Services Practice 12(1).
        15. Whitcombe and Osei (2024). Energy Policy Letters 6.
        16. Ruiz, Petrov and Andersen (2023). Case Studies in Building Energy 7.

        Not accessed: the full text of [4]; the publisher says the {RESEARCH_FAILURE} or a
        purchase, so only its abstract and the write-up [5] were used.
        """
    ))
    return t
